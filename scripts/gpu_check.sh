#!/usr/bin/env bash
# The GPU checks of weft on a machine with a CUDA device, from a build made
# with -DWEFT_ENABLE_CUDA=ON (CMAKE_CUDA_ARCHITECTURES for that device):
#
#   scripts/gpu_check.sh [--build DIR] [--out DIR] [PART...]
#
# PART (default: tests compare bench):
#   tests    every CUDA test (DIR/tests/test_*_cuda): the device harnesses, each
#            against its host reference, and the backend tests built from
#            their own sources for the GPU (WEFT_CUDA_BACKEND_TESTS)
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
#            (--multilevel-smoother yarn-lines)
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
parts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) parts+=("$1"); shift ;;
  esac
done
[ ${#parts[@]} -gt 0 ] || parts=(tests compare bench)
# Shared libraries packed with the programs (scripts/gpu_pack.sh), e.g.
# CHOLMOD for the CPU weft-run on a machine without weft's dependencies.
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$(cd "$build/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
status=0
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
echo "commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$out/device.txt"

for part in "${parts[@]}"; do
  case "$part" in
    tests)
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
      "$build/benchmarks/bench_yarn_cuda" --sizes 200,400,700,1000 --no-eigen --steps 3 --warmup 2 \
        --pcg-max-iterations 20000 > "$out/bench_yarn_cuda.json" || status=1
      # The yarn-line preconditioner solves one yarn per thread: small sizes only.
      "$build/benchmarks/bench_yarn_cuda" --sizes 200,400 --no-eigen --steps 3 --warmup 2 \
        --preconditioner yarn-lines > "$out/bench_yarn_cuda_lines.json" || status=1
      "$build/benchmarks/bench_triangle_cuda" --sizes 100,300,600 --steps 3 --warmup 2 \
        > "$out/bench_triangle_cuda.json" || status=1 ;;
    bench-cpu)
      "$build/benchmarks/bench_yarn" --sizes 200,400 --no-eigen --steps 3 --warmup 2 --pcg-max-iterations 20000 \
        > "$out/bench_yarn_cpu.json" || status=1
      "$build/benchmarks/bench_triangle" --sizes 100,300 --steps 3 --warmup 2 \
        > "$out/bench_triangle_cpu.json" || status=1 ;;
    multilevel)
      "$build/benchmarks/bench_triangle_cuda" --sizes 100,300,600 --steps 3 --warmup 2 --no-cholmod \
        --preconditioner multilevel > "$out/bench_triangle_cuda_ml.json" || status=1
      for p in block-jacobi multilevel; do
        "$build/benchmarks/bench_yarn_cuda" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
          --spmv-repeats 0 --preconditioner $p > "$out/bench_yarn_cuda_$p.json" || status=1
      done
      for r in off every-prepare; do
        "$build/benchmarks/bench_yarn_cuda" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
          --spmv-repeats 0 --preconditioner multilevel --multilevel-refresh $r \
          > "$out/bench_yarn_cuda_multilevel_$r.json" || status=1
      done
      "$build/benchmarks/bench_yarn_cuda" --sizes 200,400 --no-eigen --no-cholmod --steps 10 --warmup 3 \
        --spmv-repeats 0 --preconditioner multilevel --multilevel-smoother yarn-lines \
        > "$out/bench_yarn_cuda_multilevel_yarn_lines.json" || status=1 ;;
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
