"""Checks a PNG from scripts/render.sh: a valid 8-bit RGB(A) PNG whose pixels
are not all the background's colour (the top-left pixel's), with at least
1 % of them covered. Decodes with zlib only (no imaging library).

    check_png.py FILE.png
"""
import struct
import sys
import zlib


def fail(message):
    print("FAILED: %s: %s" % (sys.argv[1], message))
    sys.exit(1)


data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    fail("not a PNG")
at, idat, header = 8, b"", None
while at < len(data):
    length, kind = struct.unpack(">I4s", data[at:at + 8])
    body = data[at + 8:at + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    at += 12 + length
if header is None:
    fail("no IHDR")
width, height, depth, colour_type = header[:4]
channels = {2: 3, 6: 4}.get(colour_type)
if depth != 8 or channels is None:
    fail("expected 8-bit RGB or RGBA, got depth %d colour type %d" % (depth, colour_type))
raw = zlib.decompress(idat)
stride = width * channels
rows, previous = [], bytearray(stride)
for y in range(height):
    kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b = previous[i]
        c = previous[i - channels] if i >= channels else 0
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif kind != 0:
            fail("bad filter type %d" % kind)
    rows.append(bytes(line))
    previous = line
background = rows[0][:3]
covered = sum(1 for row in rows for x in range(width) if row[x * channels:x * channels + 3] != background)
if covered < 0.01 * width * height:
    fail("%d of %d pixels differ from the background" % (covered, width * height))
print("%s: %d x %d, %d pixels (%.0f %%) show the cloth" % (sys.argv[1], width, height, covered,
                                                            100.0 * covered / (width * height)))
