"""Reads weft-run's .vtp frames with VTK's XML reader (tests/examples/vtk_reader.sh).

For each scene under WORK_DIR, the binary and the ASCII run must give
frames that VTK reads without error, with matching point and cell counts,
the arrays weft documents (docs/scenes.md, "Frame files") and identical
values. Prints the number of checks that ran; exits 1 on the first failure.
"""
import glob
import os
import sys

from vtkmodules.vtkCommonCore import vtkFileOutputWindow, vtkOutputWindow
from vtkmodules.vtkIOXML import vtkXMLPolyDataReader
from vtkmodules.util.numpy_support import vtk_to_numpy

work = sys.argv[1]
# VTK reports reader errors through its output window: send them to a file
# that is checked after every read.
log = os.path.join(work, "vtk_errors.log")
window = vtkFileOutputWindow()
window.SetFileName(log)
vtkOutputWindow.SetInstance(window)

checks = 0


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def read(path):
    global checks
    reader = vtkXMLPolyDataReader()
    reader.SetFileName(path)
    reader.Update()
    if os.path.exists(log) and os.path.getsize(log) > 0:
        fail(path + ": VTK reported: " + open(log).read().strip())
    data = reader.GetOutput()
    if data.GetNumberOfPoints() == 0:
        fail(path + ": no points")
    checks += 1
    return data


expected_arrays = {"determinism_yarn": {"arc_length", "cloth", "node_kind"}, "determinism_triangle": set()}
for scene, arrays in expected_arrays.items():
    binary = sorted(glob.glob(os.path.join(work, scene, "binary", "frames", "*.vtp")))
    ascii_ = sorted(glob.glob(os.path.join(work, scene, "ascii", "frames", "*.vtp")))
    if len(binary) < 3 or [os.path.basename(p) for p in binary] != [os.path.basename(p) for p in ascii_]:
        fail("%s: frames missing (%d binary, %d ascii)" % (scene, len(binary), len(ascii_)))
    first = open(binary[0], "rb").read()
    if b'format="appended"' not in first or b"<AppendedData" not in first:
        fail(binary[0] + ": not written as appended binary data")
    if b'format="appended"' in open(ascii_[0], "rb").read():
        fail(ascii_[0] + ": not ASCII")
    for b, a in zip(binary, ascii_):
        db, da = read(b), read(a)
        for what, nb, na in (("points", db.GetNumberOfPoints(), da.GetNumberOfPoints()),
                             ("lines", db.GetNumberOfLines(), da.GetNumberOfLines()),
                             ("polys", db.GetNumberOfPolys(), da.GetNumberOfPolys())):
            if nb != na:
                fail("%s: %d %s binary, %d ascii" % (b, nb, what, na))
        if db.GetNumberOfLines() + db.GetNumberOfPolys() == 0:
            fail(b + ": no cells")
        if (vtk_to_numpy(db.GetPoints().GetData()) != vtk_to_numpy(da.GetPoints().GetData())).any():
            fail(b + ": coordinates differ from the ASCII frame's")
        names = {db.GetPointData().GetArrayName(i) for i in range(db.GetPointData().GetNumberOfArrays())}
        if names != arrays:
            fail("%s: point arrays %s, expected %s" % (b, sorted(names), sorted(arrays)))
        for name in arrays:
            xb = vtk_to_numpy(db.GetPointData().GetArray(name))
            xa = vtk_to_numpy(da.GetPointData().GetArray(name))
            if xb.shape != (db.GetNumberOfPoints(),) or (xb != xa).any():
                fail("%s: array %s differs from the ASCII frame's" % (b, name))
        for cells in ("GetLines", "GetPolys"):
            cb, ca = getattr(db, cells)(), getattr(da, cells)()
            if (vtk_to_numpy(cb.GetConnectivityArray()) != vtk_to_numpy(ca.GetConnectivityArray())).any():
                fail("%s: %s connectivity differs" % (b, cells))
            checks += 1
# The .pvd series list every frame with its time (10 steps apart).
import json
import xml.etree.ElementTree as ElementTree

for scene, series in (("determinism_yarn", ("warp.pvd", "weft.pvd")), ("determinism_triangle", ("cloth.pvd",))):
    time_step = json.load(open(os.path.join(work, scene, "binary", "scene.json")))["time_step"]
    frames = os.path.join(work, scene, "binary", "frames")
    for name in series:
        datasets = ElementTree.parse(os.path.join(frames, name)).getroot().find("Collection").findall("DataSet")
        files = sorted(glob.glob(os.path.join(frames, "frame_*_%s.vtp" % name[:-4])))
        if [d.get("file") for d in datasets] != [os.path.basename(f) for f in files]:
            fail("%s/%s: lists %s, the directory holds %s" % (scene, name, [d.get("file") for d in datasets], files))
        for k, d in enumerate(datasets):
            if abs(float(d.get("timestep")) - 10 * k * time_step) > 1e-12:
                fail("%s/%s: frame %d at t = %s, expected %g" % (scene, name, k, d.get("timestep"), 10 * k * time_step))
            checks += 1
print("VTK read every frame of both encodings; the .pvd series list them with their times: %d checks" % checks)
