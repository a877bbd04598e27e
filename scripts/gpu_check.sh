#!/usr/bin/env bash
# The GPU checks of weft on a machine with a CUDA device, from a build made
# with -DWEFT_ENABLE_CUDA=ON (CMAKE_CUDA_ARCHITECTURES for that device):
#
#   scripts/gpu_check.sh [--build DIR] [--out DIR] [--jobs N] [--case-timeout S]
#                        [--deadline S] [PART...]
#
#   --jobs N          tests: run each Catch2 test case as its own process, N at
#                     a time (default 1: each test program whole, one after
#                     another); the device harnesses run whole in the same pool
#   --case-timeout S  tests with --jobs: stop a case (or harness) after S
#                     seconds and report it as timed out (default 0: no limit)
#   --deadline S      tests with --jobs: start no case later than S seconds
#                     after the part began; the cases left are listed as not
#                     run (default 0: no deadline)
#
# PART (default: tests compare bench):
#   tests    every CUDA test (DIR/tests/test_*_cuda): the device harnesses, each
#            against its host reference, and the backend tests built from
#            their own sources for the GPU (WEFT_CUDA_BACKEND_TESTS); with
#            --jobs, the programs named in WEFT_GPU_TEST_ORDER (space-separated
#            names, e.g. "test_backend_multilevel_cuda") go first
#   compare  weft-run and weft-run-cuda on every shipped scene for 100 steps
#            (scripts/compare_backends.sh): energies, PCG iterations, ms/step
#   bench    bench_yarn_cuda at 200², 400², 700², 1000² crossings and
#            bench_triangle_cuda at 100², 300², 600² vertices (JSON)
#   bench-cpu  bench_yarn and bench_triangle on CPU threads at the smaller sizes
#   multilevel bench_triangle_cuda at 100², 300², 600² and bench_yarn_cuda at
#            200², 400² (10 steps) with --preconditioner multilevel, and the
#            same yarn sizes with block Jacobi and with the multilevel coarse
#            values never refreshed (--multilevel-refresh off) and refreshed
#            for every solve (every-prepare), and with the yarn-line smoother
#            (--multilevel-smoother yarn-lines); the square coarse space
#            (--multilevel-coarse-space squares) at 200² with either smoother
#   collision  the collision scenes with weft-run-cuda, fold and drop_on_cloth
#            to their end, sheet_fold for 0.2 s, and at twice their size (fold
#            80 x 40 with a 50 mm bar for 0.12 s, drop_on_cloth 60² + 40²,
#            sheet_fold 81 x 41 for 0.1 s), each stopped after 90 s: the
#            summaries (collision seconds, pairs, closest pair, Newton
#            iterations, halved steps) in collision.md
#   newton   full-Newton variants of stvk_swing, sphere_drop and tablecloth
#            (solver.newton_iterations 6/10/8, newton_tolerance 1e-4, written
#            to --out), GPU against CPU threads
#
# On a machine without weft's build dependencies, pack the build with
# scripts/gpu_pack.sh and unpack it there first.
#
# Logs and JSON go to --out (default gpu_check_out). Exit status: 0 when every
# part ran clean, 1 otherwise (each failure is printed).
set -u
build=build
out=gpu_check_out
jobs=1
case_timeout=0
deadline=0
parts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --case-timeout) case_timeout=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    -h|--help) sed -n '2,48p' "$0"; exit 0 ;;
    *) parts+=("$1"); shift ;;
  esac
done
[ ${#parts[@]} -gt 0 ] || parts=(tests compare bench)
# Shared libraries packed with the programs (scripts/gpu_pack.sh), e.g.
# CHOLMOD for the CPU weft-run on a machine without weft's dependencies.
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$(cd "$build/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here=$(cd "$(dirname "$0")/.." && pwd)
# bench_yarn's default scene is a path on the machine that built it.
yarn_scene=(--scene "$here/examples/scenes/sphere_drop.json")
mkdir -p "$out"
status=0
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
echo "commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$out/device.txt"

# One test case (or a whole harness, with an empty name) of the tests part
# with --jobs: "PROGRAM<TAB>INDEX<TAB>NAME" on stdin's line; prints one line,
# PASS, FAIL, TIMEOUT or NOT RUN, with the seconds it took and Catch2's last
# line.
run_one() {
  local t=${1%%$'\t'*} rest=${1#*$'\t'}
  local index=${rest%%$'\t'*} name=${rest#*$'\t'}
  local prog log spec=() start rc
  prog=$(basename "$t")
  log="$out/cases/$prog.$index.log"
  if [ "$deadline" -gt 0 ] && [ "$(date +%s)" -ge "$deadline_at" ]; then
    echo "NOT RUN $prog #$index ($name): past --deadline"; return 0
  fi
  # Catch2 test specs treat , [ ] \ * ~ and " as syntax: escape them so that
  # the spec matches this one name.
  [ -n "$name" ] && spec=("$(printf '%s' "$name" | sed 's/[],[\\*~"]/\\&/g')")
  start=$(date +%s%N)
  if [ "$case_timeout" -gt 0 ]; then
    timeout "$case_timeout" "$t" "${spec[@]}" > "$log" 2>&1; rc=$?
  else
    "$t" "${spec[@]}" > "$log" 2>&1; rc=$?
  fi
  local tenths secs
  tenths=$((($(date +%s%N) - start) / 100000000))
  secs="$((tenths / 10)).$((tenths % 10))"
  if [ $rc -eq 0 ]; then
    echo "PASS $prog #$index ($name) ${secs} s: $(grep . "$log" | tail -1)"
  elif [ $rc -eq 124 ]; then
    echo "TIMEOUT $prog #$index ($name) after ${secs} s: see $log"
  else
    echo "FAIL $prog #$index ($name) exit $rc, ${secs} s: see $log"
  fi
}

# The tests part with --jobs: every Catch2 test case of every CUDA test
# program as its own process, $jobs at a time, the programs of
# WEFT_GPU_TEST_ORDER first; a summary line per outcome in tests.md.
run_cases() {
  mkdir -p "$out/cases"
  local list="$out/cases/list.txt" t first=() rest=() p
  : > "$list"
  for p in ${WEFT_GPU_TEST_ORDER:-}; do [ -x "$build/tests/$p" ] && first+=("$build/tests/$p"); done
  for t in "$build"/tests/test_*_cuda; do
    case " ${WEFT_GPU_TEST_ORDER:-} " in *" $(basename "$t") "*) ;; *) rest+=("$t") ;; esac
  done
  for t in "${first[@]}" "${rest[@]}"; do
    local names index=0
    # A program without Catch2's options is a harness (tests/device): it runs
    # whole. (Catch2 2.x exits with the number of names it listed.)
    if grep -q -a -- '--list-test-names-only' "$t"; then
      names=$("$t" --list-test-names-only 2> /dev/null)
      while IFS= read -r name; do
        [ -n "$name" ] || continue
        index=$((index + 1)); printf '%s\t%s\t%s\n' "$t" "$index" "$name" >> "$list"
      done <<< "$names"
    else
      printf '%s\t0\t\n' "$t" >> "$list"
    fi
  done
  deadline_at=$(($(date +%s) + deadline))
  export out case_timeout deadline deadline_at
  export -f run_one
  echo "tests: $(wc -l < "$list") cases and harnesses, $jobs at a time"
  xargs -d '\n' -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} < "$list" | tee "$out/tests.md"
  local pass fail
  pass=$(grep -c '^PASS' "$out/tests.md")
  fail=$(grep -c -v '^PASS' "$out/tests.md")
  echo "tests: $pass passed, $fail failed, timed out or not run" | tee -a "$out/tests.md"
  [ "$fail" -eq 0 ]
}

for part in "${parts[@]}"; do
  case "$part" in
    tests)
      if [ "$jobs" -gt 1 ]; then
        run_cases || status=1
        continue
      fi
      for t in "$build"/tests/test_*_cuda; do
        name=$(basename "$t")
        if "$t" > "$out/$name.log" 2>&1; then
          echo "PASS $name: $(tail -1 "$out/$name.log")"
        else
          echo "FAIL $name (exit $?): see $out/$name.log"; tail -20 "$out/$name.log"; status=1
        fi
      done ;;
    compare)
      "$here/scripts/compare_backends.sh" --cpu "$build/examples/weft_run/weft-run" \
        --gpu "$build/examples/weft_run/weft-run-cuda" --steps 100 --out "$out/compare" \
        "$here"/examples/scenes/*.json | tee "$out/compare.md" || status=1 ;;
    bench)
      # The scene's PCG limit (2,000) is reached from 700² on; a step would be halved.
      "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200,400,700,1000 --no-eigen --steps 3 --warmup 2 \
        --pcg-max-iterations 20000 > "$out/bench_yarn_cuda.json" || status=1
      # The yarn-line preconditioner solves one yarn per thread: small sizes only.
      "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200,400 --no-eigen --steps 3 --warmup 2 \
        --preconditioner yarn-lines > "$out/bench_yarn_cuda_lines.json" || status=1
      "$build/benchmarks/bench_triangle_cuda" --sizes 100,300,600 --steps 3 --warmup 2 \
        > "$out/bench_triangle_cuda.json" || status=1 ;;
    bench-cpu)
      "$build/benchmarks/bench_yarn" "${yarn_scene[@]}" --sizes 200,400 --no-eigen --steps 3 --warmup 2 --pcg-max-iterations 20000 \
        > "$out/bench_yarn_cpu.json" || status=1
      "$build/benchmarks/bench_triangle" --sizes 100,300 --steps 3 --warmup 2 \
        > "$out/bench_triangle_cpu.json" || status=1 ;;
    multilevel)
      "$build/benchmarks/bench_triangle_cuda" --sizes 100,300,600 --steps 3 --warmup 2 --no-cholmod \
        --preconditioner multilevel > "$out/bench_triangle_cuda_ml.json" || status=1
      for p in block-jacobi multilevel; do
        "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
          --spmv-repeats 0 --preconditioner $p > "$out/bench_yarn_cuda_$p.json" || status=1
      done
      for r in off every-prepare; do
        "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
          --spmv-repeats 0 --preconditioner multilevel --multilevel-refresh $r \
          > "$out/bench_yarn_cuda_multilevel_$r.json" || status=1
      done
      "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
        --spmv-repeats 0 --preconditioner multilevel --multilevel-smoother yarn-lines \
        > "$out/bench_yarn_cuda_multilevel_yarn_lines.json" || status=1
      # The square coarse space, with each finest-level smoother: 200² only,
      # its line solves take 140-510 ms per V-cycle on a GPU (RESULTS.md,
      # "The GPU at commit f5d31d2").
      for smoother in yarn-lines chebyshev; do
        "$build/benchmarks/bench_yarn_cuda" "${yarn_scene[@]}" --sizes 200 --no-eigen --no-cholmod --steps 10 \
          --warmup 3 --spmv-repeats 0 --preconditioner multilevel --multilevel-coarse-space squares \
          --multilevel-smoother $smoother > "$out/bench_yarn_cuda_multilevel_squares_$smoother.json" || status=1
      done ;;
    collision)
      mkdir -p "$out/collision"
      python3 - "$here/examples/scenes" "$out/collision" <<'PY' || status=1
import json, sys
src, dst = sys.argv[1], sys.argv[2]
def variant(name, suffix, change):
    scene = json.load(open(f"{src}/{name}.json"))
    change(scene)
    scene["output"] = {"csv": f"{name}{suffix}.csv"}
    json.dump(scene, open(f"{dst}/{name}{suffix}.json", "w"), indent=1)
variant("fold", "", lambda s: None)
variant("drop_on_cloth", "", lambda s: None)
variant("sheet_fold", "", lambda s: None)
def fold2(s):
    s["cloth"][0]["yarns"] = [80, 40]
    s["colliders"][0]["size"][1] = 0.05
variant("fold", "_80x40", fold2)
def drop2(s):
    s["cloth"][0]["yarns"] = [60, 60]
    s["cloth"][1]["yarns"] = [40, 40]
variant("drop_on_cloth", "_2x", drop2)
variant("sheet_fold", "_2x", lambda s: s["cloth"][0].update(resolution=[81, 41]))
PY
      run="${WEFT_RUN:-$build/examples/weft_run/weft-run-cuda}"  # WEFT_RUN: another runner (e.g. the CPU build)
      : > "$out/collision.md"
      for scene in fold drop_on_cloth sheet_fold:0.2 fold_80x40:0.12 drop_on_cloth_2x sheet_fold_2x:0.1; do
        name=${scene%%:*}; duration=()
        [ "$name" != "$scene" ] && duration=(--duration "${scene#*:}")
        echo "## $name ${duration[*]}" >> "$out/collision.md"
        timeout 90 "$run" "$out/collision/$name.json" "${duration[@]}" --output-dir "$out/collision" \
          > "$out/collision/$name.log" 2>&1 || echo "(exit $?)" >> "$out/collision.md"
        tail -n 2 "$out/collision/$name.log" >> "$out/collision.md"
      done
      cat "$out/collision.md" ;;
    newton)
      mkdir -p "$out/newton"
      python3 - "$here/examples/scenes" "$out/newton" <<'PY' || status=1
import json, sys
src, dst = sys.argv[1], sys.argv[2]
for name, iterations in (("stvk_swing", 6), ("sphere_drop", 10), ("tablecloth", 8)):
    scene = json.load(open(f"{src}/{name}.json"))
    scene.setdefault("solver", {}).update(newton_iterations=iterations, newton_tolerance=1e-4)
    json.dump(scene, open(f"{dst}/{name}_newton.json", "w"), indent=1)
PY
      compare="$here/scripts/compare_backends.sh --cpu $build/examples/weft_run/weft-run --gpu $build/examples/weft_run/weft-run-cuda --out $out/newton"
      : > "$out/newton.md"
      $compare --steps 100 --tolerance 1e-6 "$out/newton/stvk_swing_newton.json" >> "$out/newton.md" || status=1
      $compare --steps 25 --tolerance 1e-4 "$out/newton/sphere_drop_newton.json" >> "$out/newton.md" || status=1
      $compare --steps 30 --tolerance 1e-4 "$out/newton/tablecloth_newton.json" >> "$out/newton.md" || status=1
      cat "$out/newton.md" ;;
    *) echo "gpu_check.sh: unknown part $part" >&2; exit 1 ;;
  esac
done
exit $status
