#!/usr/bin/env bash
# ctest scripts.render: scripts/render.sh turns a yarn frame and a triangle
# frame written by weft-run (legacy VTK and binary VTK XML) into PNGs that
# are not empty and not all background (tests/scripts/check_png.py).
#
#   render_test.sh WEFT_RUN SOURCE_DIR WORK_DIR
#
# Exit 77 (reported as skipped, with the reason) where POV-Ray is missing;
# scripts/install-deps.sh installs it.
set -u
run=$1 src=$2 work=$3
if ! command -v povray > /dev/null 2>&1; then
  echo "SKIPPED: POV-Ray is not installed (apt-get install povray)"
  exit 77
fi
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
status=0
for scene in determinism_yarn determinism_triangle; do
  for format in vtk vtp; do
    dir="$work/$scene/$format"
    mkdir -p "$dir"
    "$python" - "$src/tests/examples/scenes/$scene.json" "$dir/scene.json" "$format" <<'PY' || exit 1
import json, sys
scene = json.load(open(sys.argv[1]))
scene["duration"] = 10 * scene["time_step"]
scene["output"] = {"frames": "frames", "every": 10, "formats": [sys.argv[3]]}
json.dump(scene, open(sys.argv[2], "w"))
# For the picture only: one collider of each kind, well below the cloth.
scene["colliders"] = [{"type": "sphere", "center": [0, 0, -0.1], "radius": 0.01},
                      {"type": "box", "center": [0.03, 0, -0.1], "size": [0.02, 0.02, 0.01], "rounding": 0.002},
                      {"type": "plane", "point": [0, 0, -0.2], "normal": [0, 0, 1]}]
json.dump(scene, open(sys.argv[2].replace("scene.json", "render_scene.json"), "w"))
PY
    OMP_NUM_THREADS=1 "$run" "$dir/scene.json" --output-dir "$dir" --quiet || { echo "FAILED: weft-run $scene"; exit 1; }
    if ! bash "$src/scripts/render.sh" "$dir/frames" "$dir/frame.png" --width 160 --height 120 \
         --scene "$dir/render_scene.json"; then
      echo "FAILED: render.sh on $scene ($format)"
      status=1
      continue
    fi
    "$python" "$src/tests/scripts/check_png.py" "$dir/frame.png" || status=1
  done
done
# Bad input: a directory without frames, a frame that does not exist.
if bash "$src/scripts/render.sh" "$work" "$work/none.png" 2> "$work/err.txt"; then
  echo "FAILED: render.sh accepted a directory without frames"; status=1
elif ! grep -q "no frame_NNNNN" "$work/err.txt"; then
  echo "FAILED: render.sh's message for a directory without frames: $(cat "$work/err.txt")"; status=1
fi
if bash "$src/scripts/render.sh" "$work/determinism_yarn/vtk/frames" "$work/none.png" --frame 7 2> "$work/err.txt"; then
  echo "FAILED: render.sh accepted a missing frame"; status=1
elif ! grep -q "no frame 7" "$work/err.txt"; then
  echo "FAILED: render.sh's message for a missing frame: $(cat "$work/err.txt")"; status=1
fi
exit $status
