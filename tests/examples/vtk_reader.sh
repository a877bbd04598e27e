#!/usr/bin/env bash
# ctest examples.weft_run.vtk_reader: the frames weft-run writes open in
# VTK's own XML reader (vtkXMLPolyDataReader, the reader ParaView uses for
# .vtp), binary and ASCII alike, with the right point, cell and array counts
# and the same values in both encodings.
#
#   vtk_reader.sh WEFT_RUN SOURCE_DIR WORK_DIR
#
# Needs Debian's python3-vtk9 (scripts/install-deps.sh installs it); without
# it the test is reported as skipped (exit 77) with the reason.
set -u
run=$1 src=$2 work=$3
python=/usr/bin/python3
if ! "$python" -c "import vtkmodules.vtkIOXML, vtkmodules.util.numpy_support" > /dev/null 2>&1; then
  echo "SKIPPED: VTK's Python module or NumPy is not installed (apt-get install python3-vtk9 python3-numpy)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
for scene in determinism_yarn determinism_triangle; do
  for encoding in binary ascii; do
    dir="$work/$scene/$encoding"
    mkdir -p "$dir"
    "$python" - "$src/tests/examples/scenes/$scene.json" "$dir/scene.json" "$encoding" <<'PY' || exit 1
import json, sys
scene = json.load(open(sys.argv[1]))
scene["output"] = {"frames": "frames", "every": 10, "formats": ["vtp"], "vtp_encoding": sys.argv[3]}
json.dump(scene, open(sys.argv[2], "w"))
PY
    OMP_NUM_THREADS=1 "$run" "$dir/scene.json" --output-dir "$dir" --quiet || { echo "FAILED: weft-run $scene"; exit 1; }
  done
done
exec "$python" "$src/tests/examples/read_frames_vtk.py" "$work"
