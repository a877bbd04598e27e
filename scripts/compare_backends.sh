#!/usr/bin/env bash
# Runs scenes with two weft-run builds (by default the CPU-thread build and the
# CUDA build) for the same number of steps and compares their energy curves.
#
#   scripts/compare_backends.sh [--cpu BIN] [--gpu BIN] [--steps N]
#                               [--tolerance R] [--out DIR] SCENE.json...
#
#   --cpu BIN        first runner  (default build/examples/weft_run/weft-run)
#   --gpu BIN        second runner (default build/examples/weft_run/weft-run-cuda)
#   --steps N        steps per scene (default 100): --duration N × time_step
#   --tolerance R    largest accepted relative difference of an energy
#                    (default 1e-4; see below)
#   --out DIR        where the CSVs and logs go (default a temporary folder)
#
# For each energy column (kinetic_energy, elastic_energy, gravity_energy,
# dissipation_potential) the difference is max_t |a(t) − b(t)| divided by
# max_t max(|a(t)|, |b(t)|), the column's scale over the run. Both builds
# solve every step to the same PCG tolerance, so their states may differ by
# about that tolerance per step. The table also gives the steps run, the PCG
# iterations per step of each and the wall ms per step of each.
# Exit status: 0 every scene within the tolerance, 1 a difference above it or
# a run that failed in one build only, 2 bad arguments.
set -u
cpu=build/examples/weft_run/weft-run
gpu=build/examples/weft_run/weft-run-cuda
steps=100
tolerance=1e-4
out=""
scenes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) cpu=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "compare_backends.sh: unknown option $1" >&2; exit 2 ;;
    *) scenes+=("$1"); shift ;;
  esac
done
if [ ${#scenes[@]} -eq 0 ]; then echo "compare_backends.sh: no scene given" >&2; exit 2; fi
for bin in "$cpu" "$gpu"; do
  if [ ! -x "$bin" ]; then echo "compare_backends.sh: runner not found: $bin" >&2; exit 2; fi
done
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"

status=0
printf '| scene | steps a/b | max rel. energy difference (column) | PCG it./step a/b | ms/step a/b |\n'
printf '|---|---|---|---|---|\n'
for scene in "${scenes[@]}"; do
  name=$(basename "$scene" .json)
  dt=$(sed -n 's/.*"time_step"[^0-9.eE+-]*\([0-9.eE+-]*\).*/\1/p' "$scene" | head -1)
  if [ -z "$dt" ]; then echo "compare_backends.sh: $scene: no time_step found" >&2; exit 2; fi
  duration=$(awk -v n="$steps" -v h="$dt" 'BEGIN { printf "%.12g", n * h }')
  # Write the CSV under a fixed name in a folder per build, whatever the scene names.
  for side in a b; do
    bin=$cpu; [ $side = b ] && bin=$gpu
    mkdir -p "$out/$name.$side"
    sed 's/"csv"[[:space:]]*:[[:space:]]*"[^"]*"/"csv": "energies.csv"/' "$scene" > "$out/$name.$side/scene.json"
    if ! grep -q '"csv"' "$out/$name.$side/scene.json"; then
      echo "compare_backends.sh: $scene has no output.csv; add one to compare" >&2; exit 2
    fi
    "$bin" "$out/$name.$side/scene.json" --duration "$duration" --output-dir "$out/$name.$side" --quiet \
      > "$out/$name.$side/log" 2>&1
    echo $? > "$out/$name.$side/rc"
  done
  awk -F, -v tol="$tolerance" -v name="$name" -v rca="$(cat "$out/$name.a/rc")" -v rcb="$(cat "$out/$name.b/rc")" '
    FNR == 1 { for (i = 1; i <= NF; ++i) col[FILENAME, $i] = i; hdr = $0; next }
    FILENAME == ARGV[1] { na++; for (i = 1; i <= NF; ++i) a[na, i] = $i; next }
    { nb++; for (i = 1; i <= NF; ++i) b[nb, i] = $i }
    END {
      split("kinetic_energy elastic_energy gravity_energy dissipation_potential", names, " ")
      n = na < nb ? na : nb
      worst = 0; worst_name = "-"
      for (k = 1; k <= 4; ++k) {
        c = col[ARGV[1], names[k]]; if (!c) continue
        scale = 0; diff = 0
        for (r = 1; r <= n; ++r) {
          x = a[r, c] + 0; y = b[r, c] + 0
          if (x < 0) x = -x; if (y < 0) y = -y
          if (x > scale) scale = x; if (y > scale) scale = y
          d = a[r, c] - b[r, c]; if (d < 0) d = -d
          if (d > diff) diff = d
        }
        rel = scale > 0 ? diff / scale : 0
        if (rel > worst || worst_name == "-") { worst = rel; worst_name = names[k] }
      }
      p = col[ARGV[1], "pcg_iterations"]; m = col[ARGV[1], "ms_per_step"]
      pa = pb = ma = mb = 0
      for (r = 1; r <= na; ++r) { pa += a[r, p]; ma += a[r, m] }
      for (r = 1; r <= nb; ++r) { pb += b[r, p]; mb += b[r, m] }
      printf "| %s | %d/%d | %.3g (%s) | %.1f/%.1f | %.2f/%.2f |\n", name, na, nb, worst, worst_name,
             na ? pa / na : 0, nb ? pb / nb : 0, na ? ma / na : 0, nb ? mb / nb : 0
      bad = (rca != rcb) || (na != nb) || worst > tol || na == 0
      exit bad ? 1 : 0
    }' "$out/$name.a/energies.csv" "$out/$name.b/energies.csv" || {
    status=1
    echo "compare_backends.sh: $name: runs differ (exit codes $(cat "$out/$name.a/rc")/$(cat "$out/$name.b/rc"); logs in $out/$name.a, $out/$name.b)" >&2
  }
done
exit $status
