#!/usr/bin/env bash
# Renders one frame that weft wrote (weft-run, or write_frame in Python) to a
# PNG with POV-Ray: yarn frames as shaded tubes coloured by cloth entry
# (warp and weft in two shades), triangle frames as a smooth shaded surface.
#
#   scripts/render.sh FRAMES_DIR OUT.png [--frame N] [--width W] [--height H] [--radius R]
#                     [--scene SCENE.json]
#
#   --frame N    frame number (default: the last frame in FRAMES_DIR)
#   --width W, --height H   picture size in pixels (default 800 x 600)
#   --radius R   yarn radius in m (default: 0.3 x the median segment length)
#   --scene F    the scene the frames came from: its colliders are drawn in grey
#
# Reads frame_NNNNN_{warp,weft,cloth}.{vtk,vtp} (legacy VTK or VTK XML,
# ASCII or binary). Installs POV-Ray (Debian: povray) if it is missing.
# Exit status: 0 written, 1 failed (the message names the file), 2 bad arguments.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
if [ $# -lt 2 ]; then usage >&2; exit 2; fi
frames=$1 out=$2
shift 2
frame=-1 width=800 height=600 radius=0 scene=""
while [ $# -gt 0 ]; do
  case $1 in
    --frame) frame=${2:?--frame needs a number}; shift 2 ;;
    --width) width=${2:?--width needs a number}; shift 2 ;;
    --height) height=${2:?--height needs a number}; shift 2 ;;
    --radius) radius=${2:?--radius needs a number}; shift 2 ;;
    --scene) scene=${2:?--scene needs a file}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "render.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$frame" "$width" "$height"; do
  [[ $value =~ ^-?[0-9]+$ ]] || { echo "render.sh: not an integer: $value" >&2; exit 2; }
done
[ -d "$frames" ] || { echo "render.sh: no directory $frames" >&2; exit 1; }
if ! command -v povray > /dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends povray
fi
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$root/scripts/render_frame.py" "$frames" "$frame" "$work/frame.pov" --radius "$radius" \
  --width "$width" --height "$height" --scene "$scene"
mkdir -p "$(dirname "$out")"
# +A: antialiasing; -D: no display window; +FN: PNG; the log only on failure.
if ! povray "+I$work/frame.pov" "+O$out" "+W$width" "+H$height" +A0.3 +FN -D -V +WL0 \
     "+L$(dirname "$(command -v povray)")/../share/povray-3.7/include" > "$work/povray.log" 2>&1; then
  tail -20 "$work/povray.log" >&2
  echo "render.sh: POV-Ray failed on frame $frame of $frames" >&2
  exit 1
fi
[ -s "$out" ] || { echo "render.sh: POV-Ray wrote no picture to $out" >&2; exit 1; }
echo "wrote $out"
