#!/usr/bin/env bash
# Builds the libFuzzer harnesses of weft's file readers (tests/fuzz/: scene
# JSON with the models built from it, tabulated material JSON, OBJ meshes,
# BCC curve files, checkpoint files)
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer, and runs each
# for a while on a copy of its seed corpus (the shipped files). A crash, a
# sanitizer report, an exception other than weft::InvalidInput, a timeout or
# running out of memory fails the run; the input is kept in the build
# directory (crash-*, timeout-*, oom-*).
#
# Usage: bash scripts/fuzz.sh [--seconds N] [build-dir]   (default 60 s; the
# five harnesses run at the same time, each for N seconds)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds=60
if [ "${1:-}" = "--seconds" ]; then seconds=$2; shift 2; fi
build="$(realpath -m "${1:-$root/build-fuzz}")"
bash "$root/scripts/install-deps.sh"
if ! command -v clang++ > /dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
fi
generator=()
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null 2>&1; then generator=(-G Ninja); fi
cmake "${generator[@]}" -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_DEBUG= -DWEFT_BUILD_FUZZERS=ON -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF \
  -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_ENABLE_CUDA=OFF -DWEFT_PRECOMPILED=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target fuzz_scene fuzz_material fuzz_obj fuzz_bcc fuzz_checkpoint
status=0
# Runs fuzz_NAME on a fresh copy of its seeds for $seconds; the three run
# side by side (libFuzzer workers are single-threaded).
run() {
  local name=$1
  shift
  local corpus="$build/corpus_$name"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp "$@" "$corpus/"
  # -rss_limit_mb: a reader must not need 2 GB for a 4 KB input.
  (cd "$build" && "./tests/fuzz/fuzz_$name" "$corpus" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 > "$build/fuzz_$name.log" 2>&1)
}
report() {
  local name=$1 code=$2 seeds=$3
  local log="$build/fuzz_$name.log"
  if [ "$code" -eq 0 ]; then
    local runs
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz_$name: ${runs:-?} inputs in ${seconds} s from $seeds seeds, no finding"
  else
    echo "fuzz_$name: FINDING (log: $log)"
    grep -E "ERROR|SUMMARY|terminate|Test unit written" "$log" | head -10
    status=1
  fi
}
scenes=("$root"/examples/scenes/*.json "$root"/tests/examples/scenes/*.json)
materials=("$root"/examples/materials/*.json)
meshes=("$root"/tests/fuzz/corpus/obj/*.obj)
curves=("$root"/tests/fuzz/corpus/bcc/*.bcc)
checkpoints=("$root"/tests/fuzz/corpus/checkpoint/*.checkpoint)
run scene "${scenes[@]}" & scene_pid=$!
run material "${materials[@]}" & material_pid=$!
run obj "${meshes[@]}" & obj_pid=$!
run bcc "${curves[@]}" & bcc_pid=$!
run checkpoint "${checkpoints[@]}" & checkpoint_pid=$!
code=0; wait $scene_pid || code=$?; report scene $code ${#scenes[@]}
code=0; wait $material_pid || code=$?; report material $code ${#materials[@]}
code=0; wait $obj_pid || code=$?; report obj $code ${#meshes[@]}
code=0; wait $bcc_pid || code=$?; report bcc $code ${#curves[@]}
code=0; wait $checkpoint_pid || code=$?; report checkpoint $code ${#checkpoints[@]}
exit $status
