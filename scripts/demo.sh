#!/usr/bin/env bash
# Installs dependencies, builds the examples and runs the main demo: the
# rotating spring of 2018 Sec. 3.6 with no damping, strain-rate damping and
# Rayleigh damping, written to out/rotating_spring.csv and out/rotating_spring.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-demo}"
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_ENABLE_CUDA=OFF
cmake --build "$build" -j "$(nproc)" --target rotating_spring
mkdir -p "$root/out"
"$build/examples/rotating_spring/rotating_spring" --damping strain-rate --beta 0.05 --csv "$root/out/rotating_spring.csv"
"$build/examples/rotating_spring/rotating_spring" --plot "$root/out/rotating_spring.png"
echo "wrote $root/out/rotating_spring.csv and $root/out/rotating_spring.png"
