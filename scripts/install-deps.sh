#!/usr/bin/env bash
# Installs the Debian 12 packages weft needs (only those missing).
set -euo pipefail
packages=(cmake g++ make ninja-build libeigen3-dev catch2 nlohmann-json3-dev gnuplot-nox libsuitesparse-dev clang-format
          libcli11-dev python3-vtk9 python3-numpy python3-dev pybind11-dev python3-pytest povray)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
