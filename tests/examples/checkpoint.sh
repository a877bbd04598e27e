#!/usr/bin/env bash
# ctest examples.weft_run.checkpoint: a run interrupted and resumed from its
# checkpoint writes what an uninterrupted run writes.
#
#   checkpoint.sh WEFT_RUN SOURCE_DIR WORK_DIR
#
# 1. Each scene (a yarn patch with friction and EIL tracking, and the same
#    patch with EIL tracking off; sliding_rods, whose rods slide through
#    their contact with EIL nodes; a triangle sheet under full Newton) runs
#    N steps in one go, and N/2 steps with --checkpoint-every, then --resume
#    to N: the CSVs (every column but the wall time ms_per_step) and every
#    frame file (.vtk, .vtp, .pvd, .obj, .bcc) must be byte-identical.
# 2. SIGTERM during a run: exit status 3, a checkpoint of the step it stopped
#    after, and the run resumed from it to the end equals the uninterrupted run.
# 3. --other-linear-solver continues a checkpoint with another preconditioner
#    to the same end within the solves' tolerance, and refuses other changes.
# 4. Refused checkpoints name why: another scene, another linear solve without
#    --other-linear-solver, an earlier build's checkpoint with it, truncated,
#    corrupted, another version, not a checkpoint.
set -u
run=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
export OMP_NUM_THREADS=1
status=0
compared=0
fail() {
  echo "FAILED: $*"
  status=1
}
strip_time() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "ms_per_step") skip = i }
           { out = ""; sep = ""; for (i = 1; i <= NF; ++i) if (i != skip) { out = out sep $i; sep = "," } print out }' "$1"
}
# same_output DIR_A DIR_B: CSVs without the wall time and every other file, byte for byte.
same_output() {
  local a=$1 b=$2 files=0
  for f in $(cd "$a" && find . -type f ! -name '*.checkpoint' | sort); do
    if [ ! -f "$b/$f" ]; then
      fail "$b/$f missing"
      continue
    fi
    case $f in
      *.csv) cmp -s <(strip_time "$a/$f") <(strip_time "$b/$f") || fail "$f differs ($a, $b)" ;;
      *) cmp -s "$a/$f" "$b/$f" || fail "$f differs ($a, $b)" ;;
    esac
    files=$((files + 1))
  done
  [ "$files" -gt 3 ] || fail "only $files files compared in $a"
  compared=$((compared + files))
}
# A scene with every frame format and frames every 5 steps.
variant() {
  python3 - "$1" "$2" <<'PY' || exit 1
import json, sys
scene = json.load(open(sys.argv[1]))
formats = ["vtk", "vtp", "obj"] + (["bcc"] if scene["cloth"][0].get("type", "woven") != "triangle" else [])
scene["output"] = {"csv": "run.csv", "frames": "frames", "every": 5, "formats": formats}
json.dump(scene, open(sys.argv[2], "w"))
PY
}

# The yarn patch with EIL tracking off as well: the stepper then keeps no
# topology of its own, and the resumed run's frames still draw the yarns.
python3 - "$src/tests/examples/scenes/determinism_yarn.json" "$work/eil_off_yarn.json" <<'PY' || exit 1
import json, sys
scene = json.load(open(sys.argv[1]))
scene["name"] = "eil_off_yarn"
scene.setdefault("solver", {})["eil"] = {"enabled": False}
json.dump(scene, open(sys.argv[2], "w"))
PY
for scene in "$src/tests/examples/scenes/determinism_yarn.json" "$work/eil_off_yarn.json" \
             "$src/examples/scenes/sliding_rods.json" "$src/tests/examples/scenes/determinism_triangle.json"; do
  name=$(basename "$scene" .json)
  dir="$work/$name"
  mkdir -p "$dir/full" "$dir/part"
  variant "$scene" "$dir/scene.json"
  h=$(python3 -c "import json; print(json.load(open('$dir/scene.json'))['time_step'])")
  steps=40
  [ "$name" = sliding_rods ] && steps=140  # its rods meet and EIL nodes exist around step 60
  full=$(python3 -c "print($steps * $h)")
  half=$(python3 -c "print($steps // 2 * $h)")
  "$run" "$dir/scene.json" --output-dir "$dir/full" --duration "$full" --quiet || fail "$name: uninterrupted run"
  "$run" "$dir/scene.json" --output-dir "$dir/part" --duration "$half" --checkpoint-every $((steps / 4)) --quiet \
    || fail "$name: first half"
  [ -f "$dir/part/scene.checkpoint" ] || fail "$name: no checkpoint written"
  "$run" "$dir/scene.json" --output-dir "$dir/part" --duration "$full" --resume "$dir/part/scene.checkpoint" --quiet \
    || fail "$name: resumed run"
  same_output "$dir/full" "$dir/part"
done

# SIGTERM: the yarn patch for 10 s of simulated time, stopped after about a second.
dir="$work/sigterm"
mkdir -p "$dir/run"
cp "$work/determinism_yarn/scene.json" "$dir/scene.json"
"$run" "$dir/scene.json" --output-dir "$dir/run" --duration 10 --checkpoint-every 100000 --quiet &
pid=$!
sleep 1.5
kill -TERM $pid
wait $pid
code=$?
if [ $code -ne 3 ]; then
  fail "SIGTERM: exit status $code, expected 3"
elif [ ! -f "$dir/run/scene.checkpoint" ]; then
  fail "SIGTERM: no checkpoint"
else
  rows=$(($(wc -l < "$dir/run/run.csv") - 1))
  end=$(python3 -c "print(($rows + 5) * 0.001)")
  mkdir -p "$dir/full"
  "$run" "$dir/scene.json" --output-dir "$dir/full" --duration "$end" --quiet || fail "SIGTERM: uninterrupted run"
  "$run" "$dir/scene.json" --output-dir "$dir/run" --duration "$end" --resume "$dir/run/scene.checkpoint" --quiet \
    || fail "SIGTERM: resumed run"
  echo "SIGTERM after step $rows: exit status 3, resumed to step $((rows + 5))"
  same_output "$dir/full" "$dir/run"
fi

# A checkpoint of an earlier build, without the blocks added since (the
# counters and state of collision's create_contacts), resumes to the same end.
dir="$work/earlier"
mkdir -p "$dir"
cp -r "$work/determinism_yarn/part" "$dir/part"
python3 - "$dir/part/scene.checkpoint" <<'PY' || fail "earlier: could not rewrite the checkpoint"
import struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
added = {b"run.created_contacts", b"yarn.initial_segments", b"yarn.meeting", b"yarn.created", b"yarn.declined",
         b"run.equations_fingerprint"}
assert data[:8] == b"WEFTCKPT"
out, at, dropped = bytearray(data[:12]), 12, 0
while data[at:at + 8] != b"WEFT-END":
    (length,) = struct.unpack_from("<I", data, at)
    name = data[at + 4:at + 4 + length]
    (count,) = struct.unpack_from("<Q", data, at + 4 + length)
    end = at + 12 + length + count
    if name in added:
        dropped += 1
    else:
        out += data[at:end]
    at = end
out += b"WEFT-END"
h = 1469598103934665603
for b in out:
    h = ((h ^ b) * 1099511628211) % (1 << 64)
out += struct.pack("<Q", h)
open(path, "wb").write(out)
print(f"earlier: {dropped} blocks left out")
sys.exit(0 if dropped == len(added) else 1)
PY
full=$(python3 -c "print(40 * $(python3 -c "import json; print(json.load(open('$work/determinism_yarn/scene.json'))['time_step'])"))")
"$run" "$work/determinism_yarn/scene.json" --output-dir "$dir/part" --duration "$full" \
  --resume "$dir/part/scene.checkpoint" --quiet || fail "earlier: resumed run"
same_output "$work/determinism_yarn/full" "$dir/part"
earlier_checkpoint="$dir/part/scene.checkpoint"

# --other-linear-solver: the yarn patch's half-way checkpoint continued with
# another preconditioner and PCG tolerance (the scene rewritten with other
# spacing and key order as well) reaches the uninterrupted run's end within
# the solves' tolerance (energies to 1e-6) with other PCG iterations; without the option, or with a physics key changed
# too, it is refused.
good="$work/determinism_yarn/part/scene.checkpoint"
dir="$work/other_linear_solver"
mkdir -p "$dir/part"
head -n 21 "$work/determinism_yarn/full/run.csv" > "$dir/part/run.csv"  # the header and steps 1-20
python3 - "$work/determinism_yarn/scene.json" "$dir" <<'PY' || fail "other linear solver: could not write the scenes"
import json, sys
scene = json.load(open(sys.argv[1]))
scene.setdefault("solver", {}).update({"preconditioner": "yarn-lines", "pcg_tolerance": 1e-7})
json.dump(dict(reversed(list(scene.items()))), open(sys.argv[2] + "/lines.json", "w"), indent=3)
scene["solver"]["newton_tolerance"] = 1e-3
json.dump(scene, open(sys.argv[2] + "/physics.json", "w"))
PY
full=$(python3 -c "print(40 * 0.001)")
log=$("$run" "$dir/lines.json" --output-dir "$dir/part" --duration "$full" --resume "$good" --other-linear-solver 2>&1) \
  || fail "other linear solver: resumed run ($log)"
case $log in
  *"resumed with other linear-solve settings"*) ;;
  *) fail "other linear solver: no notice in the log ($log)" ;;
esac
python3 - "$work/determinism_yarn/full/run.csv" "$dir/part/run.csv" <<'PY' || fail "other linear solver: not the same run"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:])
assert len(a) == len(b) == 40, (len(a), len(b))
checked = 0
for key in a[0]:
    if key in ("step", "time") or "energy" in key:
        x, y = float(a[-1][key]), float(b[-1][key])
        assert abs(x - y) <= 1e-6 * max(abs(x), 1e-12), (key, x, y)
        checked += 1
assert checked >= 3, a[0].keys()
pcg = [sum(int(row["pcg_iterations"]) for row in rows[20:]) for rows in (a, b)]
assert pcg[0] != pcg[1], pcg  # the other preconditioner ran
print(f"other linear solver: step 40's {checked} columns within 1e-6 of the uninterrupted run; "
      f"PCG iterations of steps 21-40 {pcg[0]} and {pcg[1]}")
PY
echo "other linear solver: resumed with yarn-lines"
"$run" "$dir/physics.json" --output-dir "$dir" --duration "$full" --resume "$good" --other-linear-solver --quiet \
  > "$dir/physics.log" 2>&1 && fail "other linear solver: a changed newton_tolerance was accepted"
grep -q "in more than the solver keys of the linear solve" "$dir/physics.log" \
  || fail "other linear solver: refusal not named ($(cat "$dir/physics.log"))"

# Refusals, each naming its reason.
refused=0
expect_refusal() {  # SCENE CHECKPOINT TEXT
  local out
  out=$("$run" "$1" --output-dir "$work/refused" --resume "$2" --quiet 2>&1)
  local code=$?
  if [ $code -ne 1 ] || ! printf '%s' "$out" | grep -q "$3"; then
    fail "resume with $2: exit $code, expected 1 and '$3'; got: $out"
  fi
  refused=$((refused + 1))
}
mkdir -p "$work/refused"
expect_refusal "$work/sliding_rods/scene.json" "$good" "continues only the run it was written by"
expect_refusal "$dir/lines.json" "$good" "with --other-linear-solver"
# An earlier build's checkpoint has no fingerprint without the linear-solve keys.
"$run" "$work/determinism_yarn/scene.json" --output-dir "$work/refused" --resume "$earlier_checkpoint" \
  --other-linear-solver --quiet > "$work/refused/earlier.log" 2>&1 \
  && fail "an earlier build's checkpoint was accepted with --other-linear-solver"
if grep -q 'no block "run.equations_fingerprint"' "$work/refused/earlier.log"; then
  refused=$((refused + 1))
else
  fail "earlier checkpoint with --other-linear-solver: $(cat "$work/refused/earlier.log")"
fi
head -c -13 "$good" > "$work/refused/truncated.checkpoint"
expect_refusal "$work/determinism_yarn/scene.json" "$work/refused/truncated.checkpoint" "is truncated"
cp "$good" "$work/refused/corrupted.checkpoint"
printf '\x55' | dd of="$work/refused/corrupted.checkpoint" bs=1 seek=200 conv=notrunc status=none
expect_refusal "$work/determinism_yarn/scene.json" "$work/refused/corrupted.checkpoint" "is corrupted"
cp "$good" "$work/refused/version.checkpoint"
printf '\x09' | dd of="$work/refused/version.checkpoint" bs=1 seek=8 conv=notrunc status=none
expect_refusal "$work/determinism_yarn/scene.json" "$work/refused/version.checkpoint" "checkpoint version 9"
expect_refusal "$work/determinism_yarn/scene.json" "$work/determinism_yarn/scene.json" "is not a weft checkpoint"

echo "compared $compared files; $refused checkpoints refused"
[ "$compared" -gt 0 ] && [ "$refused" -eq 7 ] || fail "checks did not run"
exit $status
