#!/usr/bin/env bash
# Installs dependencies, builds everything (OpenMP backend; CUDA variants too
# when nvcc is found) and runs all tests through ctest.
# Usage: bash scripts/test.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
bash "$root/scripts/install-deps.sh"
jobs="$(nproc)"
# The CUDA tests always build where nvcc is found (they skip without a GPU);
# weft-run-cuda and the CUDA benchmarks, 15 more minutes of nvcc on 2 cores,
# only where a GPU can run them.
# Without a GPU the CUDA tests only have to compile: only their device code
# is compiled (WEFT_CUDA_TEST_PROGRAMS OFF: nvcc -ptx, no host pass), and it is
# generated as PTX only (CMAKE_CUDA_ARCHITECTURES 90-virtual, no ptxas; a GPU
# would JIT it), which halves nvcc's time (measured: 8.3 -> 4.0 min for the
# yarn stepper test's translation unit on the 2-core machine).
# Both branches set the CUDA flags, so that a build directory configured
# once without a GPU is not left unoptimized, or PTX-only, where one is found.
cuda_programs=ON
cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES=native "-DCMAKE_CUDA_FLAGS_RELEASE=-O3 -DNDEBUG")
if ! nvidia-smi -L > /dev/null 2>&1; then
  cuda_programs=OFF
  # Nothing runs that code, so it is not optimized either (host or device):
  # measured on the yarn stepper test's translation unit, 476 s at -O3 and
  # 173 s with -O0 -Xcicc -O0 on the 2-core machine.
  cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual "-DCMAKE_CUDA_FLAGS_RELEASE=-O0 -Xcicc -O0 -DNDEBUG")
  echo "test.sh: no GPU found: weft-run-cuda and the CUDA benchmarks are not built; the CUDA tests' device code is compiled (PTX), their programs are not"
fi
# Ninja for a new build directory: it schedules objects across targets
# without waiting for the libraries they link. On the 2-core machine the
# build is compute-bound and took as long as with Makefiles
# (benchmarks/RESULTS.md, "CI time"). A directory configured before keeps
# its generator.
generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null 2>&1; then generator=(-G Ninja); fi
cmake "${generator[@]}" -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_CUDA_PROGRAMS=$cuda_programs \
  -DWEFT_CUDA_TEST_PROGRAMS=$cuda_programs "${cuda_arch[@]}"
cmake --build "$build" -j "$jobs"
cd "$build"
# Two tests side by side on 2 cores, each on one OpenMP thread (ctest
# ENVIRONMENT); tests that start threads of their own run alone (PROCESSORS,
# tests/CMakeLists.txt). Two 2-thread tests on 2 cores slow each other
# 10-20x (measured: 136 s with -j 2 against 34 s with -j 1 for the whole
# suite when every test ran 2 threads).
ctest --output-on-failure -j "$jobs"
