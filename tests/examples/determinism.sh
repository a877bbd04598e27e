#!/usr/bin/env bash
# ctest examples.weft_run.determinism: whole steps give the same bits on any
# thread count and any machine (vector_ops.hpp, fixed_order_transform_reduce).
#
#   determinism.sh WEFT_RUN SOURCE_DIR WORK_DIR
#
# Each scene (a yarn scene with friction and EIL tracking, the EIL scene
# sliding_rods.json, a triangle scene with full Newton, a swinging sheet
# whose multilevel hierarchy is rebuilt by its "growth" rule) runs with
# OMP_NUM_THREADS = 1, 2 and 4, and with one thread pinned to one core
# (taskset: Thrust's own reductions split their range by the number of
# available cores, so that case stands for a machine with another core
# count). The CSVs (every column but the wall time ms_per_step) and every
# frame file must be byte-identical to the first run's.
set -u
run=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
scenes=("$src/tests/examples/scenes/determinism_yarn.json" "$src/examples/scenes/sliding_rods.json"
        "$src/tests/examples/scenes/determinism_triangle.json" "$src/tests/examples/scenes/determinism_multilevel.json")
configs=("threads1" "threads2" "threads4")
if command -v taskset > /dev/null 2>&1 && [ "$(nproc --all)" -gt 1 ]; then
  configs+=("onecore")
else
  echo "note: taskset or a second core missing: the one-core case is not run"
fi
# The CSV without its ms_per_step column.
strip_time() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "ms_per_step") skip = i }
           { out = ""; sep = ""; for (i = 1; i <= NF; ++i) if (i != skip) { out = out sep $i; sep = "," } print out }' "$1"
}
status=0
compared=0
for scene in "${scenes[@]}"; do
  name=$(basename "$scene" .json)
  for config in "${configs[@]}"; do
    dir="$work/$name/$config"
    mkdir -p "$dir"
    case $config in
      threads*) env OMP_NUM_THREADS="${config#threads}" "$run" "$scene" --output-dir "$dir" --quiet ;;
      onecore) env OMP_NUM_THREADS=1 taskset -c 0 "$run" "$scene" --output-dir "$dir" --quiet ;;
    esac || { echo "FAIL: $name ($config): weft-run exited with an error"; status=1; continue; }
    csv=$(ls "$dir"/*.csv)
    strip_time "$csv" > "$dir/steps.txt"
    rm "$csv"
  done
  reference="$work/$name/${configs[0]}"
  rows=$(wc -l < "$reference/steps.txt")
  frames=$(find "$reference" -type f | wc -l)
  if [ "$rows" -lt 10 ] || [ "$frames" -lt 3 ]; then
    echo "FAIL: $name: the reference run wrote $rows CSV rows and $frames files"
    status=1
    continue
  fi
  for config in "${configs[@]:1}"; do
    if diff -r -q "$reference" "$work/$name/$config" > "$work/$name/$config.diff"; then
      compared=$((compared + 1))
      echo "ok: $name, $config = ${configs[0]} ($rows CSV rows, $frames files byte-identical)"
    else
      echo "FAIL: $name, $config differs from ${configs[0]}:"
      head -5 "$work/$name/$config.diff"
      status=1
    fi
  done
done
echo "determinism: $compared comparisons passed"
exit $status
