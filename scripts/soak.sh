#!/usr/bin/env bash
# Long runs (not in CI): runs scenes with weft-run to their natural end (their
# "duration"), or to --max-steps steps if that comes first, and reports per
# scene whether every step succeeded, any non-finite value in the CSV, the
# largest rise of the total energy (kinetic + elastic + gravity) over one
# step, the total energy's change over the run, the peak speed and the wall
# time. Figures: benchmarks/RESULTS.md, "Long runs".
#
#   scripts/soak.sh [--max-steps N] [--out DIR] [SCENE.json ...]
#
#   --max-steps N   at most N steps per scene (default 100000)
#   --out DIR       CSVs, logs and soak.txt (default out/soak under the repo root)
#   SCENE.json ...  default: every scene in examples/scenes/
#
# weft-run is taken from $WEFT_BUILD (default: build-demo under the repo root)
# and built there when missing. Exit status: 0 every run ended well, 1 a run
# failed or wrote a non-finite value, 2 bad arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
max_steps=100000
out="$root/out/soak"
scenes=()
while [ $# -gt 0 ]; do
  case $1 in
    --max-steps) max_steps=${2:?--max-steps needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "soak.sh: unknown option $1" >&2; exit 2 ;;
    *) scenes+=("$1"); shift ;;
  esac
done
[[ $max_steps =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: --max-steps must be a positive integer" >&2; exit 2; }
[ ${#scenes[@]} -gt 0 ] || scenes=("$root"/examples/scenes/*.json)
build="${WEFT_BUILD:-$root/build-demo}"
run="$build/examples/weft_run/weft-run"
if [ ! -x "$run" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_ENABLE_CUDA=OFF > /dev/null
  cmake --build "$build" -j "$(nproc)" --target weft-run
fi
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
mkdir -p "$out"
report="$out/soak.txt"
printf '%-22s %7s %6s %-8s %12s %12s %12s %9s %9s\n' scene steps ok finite "max rise (J)" "start (J)" "end (J)" \
  "peak m/s" "wall s" > "$report"
status=0
for scene in "${scenes[@]}"; do
  name=$(basename "$scene" .json)
  dir="$out/$name"
  mkdir -p "$dir"
  # The scene with only its CSV as output, every step; duration capped.
  "$python" - "$scene" "$dir/scene.json" "$max_steps" <<'PY'
import json, sys
scene = json.load(open(sys.argv[1]))
scene["output"] = {"csv": "soak.csv"}
scene["duration"] = min(scene["duration"], int(sys.argv[3]) * scene["time_step"])
json.dump(scene, open(sys.argv[2], "w"))
PY
  start=$(date +%s%N)
  set +e
  "$run" "$dir/scene.json" --output-dir "$dir" --quiet > "$dir/log.txt" 2>&1
  code=$?
  set -e
  wall=$(( ($(date +%s%N) - start) / 1000000 ))  # ms
  "$python" - "$dir/soak.csv" "$name" "$code" "$wall" >> "$report" <<'PY' || status=1
import csv, math, sys
path, name, code, wall = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000
rows = list(csv.DictReader(open(path))) if code in (0, 2) else []
finite = all(math.isfinite(float(v)) for r in rows for v in r.values())
total = [float(r["kinetic_energy"]) + float(r["elastic_energy"]) + float(r["gravity_energy"]) for r in rows]
rise = max((b - a for a, b in zip(total, total[1:])), default=0.0)
peak = max((float(r["max_speed"]) for r in rows), default=0.0)
print("%-22s %7d %6s %-8s %12.3e %12.4e %12.4e %9.3f %9.1f" % (
    name, len(rows), "yes" if code == 0 else "NO", "yes" if finite else "NO", rise,
    total[0] if total else float("nan"), total[-1] if total else float("nan"), peak, wall))
sys.exit(0 if code == 0 and finite else 1)
PY
done
cat "$report"
exit $status
