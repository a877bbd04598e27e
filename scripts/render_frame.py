"""Writes a POV-Ray scene for one frame that weft wrote (scripts/render.sh runs it).

    render_frame.py FRAMES_DIR FRAME OUT.pov [--radius R] [--width W] [--height H]

FRAME is the frame number (-1: the last one). Yarn frames
(frame_NNNNN_warp/weft.vtk or .vtp) become tubes: a sphere at every node
and a cylinder along every segment, coloured by the `cloth` point scalar
where the frame has it (warp and weft in two shades of each cloth's colour).
Triangle frames (frame_NNNNN_cloth.vtk or .vtp) become a smooth mesh2. The
camera looks at the bounding box from above and in front, at a distance
that fits it into the picture.

Reads legacy VTK (ASCII, what weft writes as .vtk) and VTK XML (.vtp, ASCII
or appended raw binary with 64-bit block headers, what weft writes); exits
with a message naming the file for anything else.
"""
import argparse
import glob
import math
import os
import re
import struct
import sys


def fail(message):
    sys.exit("render_frame.py: " + message)


def read_vtk(path):
    """Points, cells and point scalars of a legacy ASCII VTK polydata file."""
    with open(path) as f:
        tokens = f.read().split("\n")
    points, cells, scalars = [], [], {}
    k = 0
    while k < len(tokens):
        line = tokens[k].strip()
        if line.startswith("POINTS "):
            n = int(line.split()[1])
            points = [tuple(float(x) for x in tokens[k + 1 + i].split()) for i in range(n)]
            k += n
        elif line.startswith("LINES ") or line.startswith("POLYGONS "):
            n = int(line.split()[1])
            cells = [[int(x) for x in tokens[k + 1 + i].split()[1:]] for i in range(n)]
            k += n
        elif line.startswith("SCALARS "):
            name = line.split()[1]
            n = len(points)
            scalars[name] = [float(tokens[k + 2 + i]) for i in range(n)]
            k += n + 1
        k += 1
    if not points or not cells:
        fail("%s: no points or no cells (not a weft frame?)" % path)
    return points, cells, scalars


def read_vtp(path):
    """Points, cells and point scalars of a VTK XML PolyData file (ascii or appended raw)."""
    with open(path, "rb") as f:
        data = f.read()
    appended = b""
    marker = data.find(b"<AppendedData")
    if marker >= 0:
        start = data.index(b"_", marker) + 1
        end = data.rindex(b"</AppendedData>")
        appended = data[start:end].rstrip(b"\n ")
        header = data[:marker].decode()
    else:
        header = data.decode()
    if 'header_type="UInt32"' in header:
        fail("%s: 32-bit block headers are not supported" % path)

    def array(match):
        attributes = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        kind = attributes.get("type", "Float64")
        if attributes.get("format") == "appended":
            offset = int(attributes["offset"])
            size = struct.unpack_from("<Q", appended, offset)[0]
            fmt = {"Float64": "d", "Int64": "q", "UInt64": "Q"}.get(kind)
            if fmt is None:
                fail("%s: array type %s is not supported" % (path, kind))
            values = list(struct.unpack_from("<%d%s" % (size // 8, fmt), appended, offset + 8))
        else:
            cast = float if kind.startswith("Float") else int
            values = [cast(x) for x in (match.group(2) or "").split()]
        return attributes, values

    pattern = re.compile(r"<DataArray([^>]*?)(?:/>|>(.*?)</DataArray>)", re.S)
    sections = {}
    for name in ("PointData", "Points", "Lines", "Polys"):
        m = re.search(r"<%s[^>]*>(.*?)</%s>" % (name, name), header, re.S)
        sections[name] = [array(a) for a in pattern.finditer(m.group(1))] if m else []
    if not sections["Points"]:
        fail("%s: no points (not a weft frame?)" % path)
    xyz = sections["Points"][0][1]
    points = [tuple(xyz[3 * i:3 * i + 3]) for i in range(len(xyz) // 3)]
    cell_arrays = {a["Name"]: v for a, v in (sections["Lines"] or sections["Polys"])}
    if "connectivity" not in cell_arrays:
        fail("%s: no cells" % path)
    cells, begin = [], 0
    for end in cell_arrays["offsets"]:
        cells.append(cell_arrays["connectivity"][begin:end])
        begin = end
    scalars = {a["Name"]: v for a, v in sections["PointData"]}
    return points, cells, scalars


def read_frame(path):
    return read_vtp(path) if path.endswith(".vtp") else read_vtk(path)


def frame_files(directory, frame):
    """The files of one frame: {"warp": path, "weft": path} or {"cloth": path}."""
    found = {}
    for ext in (".vtk", ".vtp"):
        for path in glob.glob(os.path.join(directory, "frame_*_*" + ext)):
            m = re.match(r"frame_(\d+)_(warp|weft|cloth)" + re.escape(ext) + "$", os.path.basename(path))
            if m:
                found.setdefault(int(m.group(1)), {}).setdefault(m.group(2), path)
    if not found:
        fail("%s: no frame_NNNNN_{warp,weft,cloth}.{vtk,vtp} files" % directory)
    number = max(found) if frame < 0 else frame
    if number not in found:
        fail("%s: no frame %d (frames %d to %d)" % (directory, frame, min(found), max(found)))
    return number, found[number]


PALETTE = [(0.80, 0.25, 0.20), (0.20, 0.45, 0.80), (0.95, 0.70, 0.15), (0.30, 0.65, 0.35), (0.60, 0.35, 0.70)]


def colour(cloth, shade):
    r, g, b = PALETTE[int(cloth) % len(PALETTE)] if cloth >= 0 else (0.6, 0.6, 0.6)
    f = 1.0 if shade == 0 else 0.72
    return "rgb <%.3f, %.3f, %.3f>" % (r * f, g * f, b * f)


def vec(p):
    # weft's scenes have z up; POV-Ray's y is up and its frame left-handed.
    return "<%.7g, %.7g, %.7g>" % (p[0], p[2], p[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("frames")
    parser.add_argument("frame", type=int)
    parser.add_argument("out")
    parser.add_argument("--radius", type=float, default=0.0, help="yarn radius (m); 0: 0.3 x the median segment")
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=600)
    parser.add_argument("--scene", default="", help="the scene file: its colliders are drawn in grey")
    args = parser.parse_args()
    number, files = frame_files(args.frames, args.frame)

    objects, all_points = [], []
    if "cloth" in files:
        points, faces, _ = read_frame(files["cloth"])
        all_points = points
        normals = [[0.0, 0.0, 0.0] for _ in points]
        for f in faces:
            a, b, c = (points[i] for i in f[:3])
            u = [b[k] - a[k] for k in range(3)]
            v = [c[k] - a[k] for k in range(3)]
            n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
            for i in f[:3]:
                for k in range(3):
                    normals[i][k] += n[k]
        for n in normals:
            length = math.sqrt(sum(x * x for x in n)) or 1.0
            n[:] = [x / length for x in n]
        mesh = ["mesh2 {", "  vertex_vectors { %d, %s }" % (len(points), ", ".join(vec(p) for p in points)),
                "  normal_vectors { %d, %s }" % (len(normals), ", ".join(vec(n) for n in normals)),
                "  face_indices { %d, %s }" % (len(faces), ", ".join("<%d, %d, %d>" % tuple(f[:3]) for f in faces)),
                "  texture { pigment { %s } finish { diffuse 0.75 specular 0.15 } }" % colour(1, 0), "}"]
        objects.append("\n".join(mesh))
    else:
        segments = []
        for shade, name in enumerate(("warp", "weft")):
            if name not in files:
                continue
            points, lines, scalars = read_frame(files[name])
            all_points = points
            cloth = scalars.get("cloth", [0.0] * len(points))
            for line in lines:
                segments.append((shade, line, [cloth[i] for i in line]))
        lengths = sorted(math.dist(all_points[a], all_points[b]) for _, line, _ in segments
                         for a, b in zip(line, line[1:]))
        radius = args.radius if args.radius > 0 else 0.3 * (lengths[len(lengths) // 2] if lengths else 1e-3)
        for shade, line, cloth in segments:
            used = [c for c in cloth if c >= 0]
            texture = "texture { pigment { %s } finish { diffuse 0.8 specular 0.2 } }" % colour(
                used[0] if used else -1, shade)
            parts = []
            for a, b in zip(line, line[1:]):
                if math.dist(all_points[a], all_points[b]) > 1e-12:
                    parts.append("cylinder { %s, %s, R }" % (vec(all_points[a]), vec(all_points[b])))
            parts += ["sphere { %s, R }" % vec(all_points[i]) for i in line]
            objects.append("union {\n  %s\n  %s\n}" % ("\n  ".join(parts), texture))
        objects.insert(0, "#declare R = %.7g;" % radius)

    # The scene's colliders, in grey; the camera frames the cloth only (a
    # plane is POV-Ray's infinite plane).
    if args.scene:
        import json

        with open(args.scene) as f:
            colliders = json.load(f).get("colliders", [])
        grey = "texture { pigment { rgb <0.78, 0.78, 0.80> } finish { diffuse 0.7 specular 0.05 } }"
        for c in colliders:
            if c["type"] == "sphere":
                objects.append("sphere { %s, %.7g %s }" % (vec(c["center"]), c["radius"], grey))
            elif c["type"] == "box":
                h = [x / 2 for x in c["size"]]
                lo_c = [c["center"][k] - h[k] for k in range(3)]
                hi_c = [c["center"][k] + h[k] for k in range(3)]
                r = min(c.get("rounding", 0.0), min(h))
                if r > 0:
                    inner_lo = [x + r for x in lo_c]
                    inner_hi = [x - r for x in hi_c]
                    objects.append("union { box { %s, %s } box { %s, %s } box { %s, %s } %s }" % (
                        vec([lo_c[0], inner_lo[1], inner_lo[2]]), vec([hi_c[0], inner_hi[1], inner_hi[2]]),
                        vec([inner_lo[0], lo_c[1], inner_lo[2]]), vec([inner_hi[0], hi_c[1], inner_hi[2]]),
                        vec([inner_lo[0], inner_lo[1], lo_c[2]]), vec([inner_hi[0], inner_hi[1], hi_c[2]]), grey))
                    corners = [[(inner_lo, inner_hi)[b >> k & 1][k] for k in range(3)] for b in range(8)]
                    objects += ["sphere { %s, %.7g %s }" % (vec(p), r, grey) for p in corners]
                    for a in range(8):
                        for k in range(3):
                            b = a | (1 << k)
                            if b != a:
                                objects.append("cylinder { %s, %s, %.7g %s }" % (vec(corners[a]), vec(corners[b]), r,
                                                                                 grey))
                else:
                    objects.append("box { %s, %s %s }" % (vec(lo_c), vec(hi_c), grey))
            elif c["type"] == "plane":
                n = c["normal"]
                objects.append("plane { %s, %.7g %s }" % (vec(n), sum(n[k] * c["point"][k] for k in range(3)) /
                                                          math.sqrt(sum(x * x for x in n)), grey))

    lo = [min(p[k] for p in all_points) for k in range(3)]
    hi = [max(p[k] for p in all_points) for k in range(3)]
    centre = [(lo[k] + hi[k]) / 2 for k in range(3)]
    size = max(max(hi[k] - lo[k] for k in range(3)), 1e-6)
    # From the front (−y), above (+z) and a little to the side, at 45°
    # elevation; far enough that the bounding box's sphere fits a 40° view.
    half_diagonal = max(0.5 * math.sqrt(sum((hi[k] - lo[k]) ** 2 for k in range(3))), 1e-6)
    distance = 1.2 * half_diagonal / math.sin(math.radians(20))
    direction = (0.35, -0.75, 0.75)
    norm = math.sqrt(sum(d * d for d in direction))
    eye = [centre[k] + distance * direction[k] / norm for k in range(3)]
    with open(args.out, "w") as f:
        f.write("// weft frame %d of %s\n" % (number, os.path.abspath(args.frames)))
        f.write("#version 3.7;\nglobal_settings { assumed_gamma 1.0 }\n")
        f.write("background { rgb <0.97, 0.97, 0.98> }\n")
        f.write("camera { perspective location %s look_at %s angle 40 right x*%d/%d }\n"
                % (vec(eye), vec(centre), args.width, args.height))
        light = [eye[0] + size, eye[1], eye[2] + 2 * size]
        f.write("light_source { %s color rgb 1.0 }\n" % vec(light))
        f.write("light_source { %s color rgb 0.45 shadowless }\n" % vec([centre[0] - 3 * size, centre[1] - 2 * size,
                                                                        centre[2] + 3 * size]))
        f.write("\n".join(objects) + "\n")
    print("frame %d: %d points -> %s" % (number, len(all_points), args.out))


if __name__ == "__main__":
    main()
