#!/usr/bin/env bash
# Installs dependencies, builds the examples and runs the main demo:
#  1. the yarn-level swing scene (2017 Fig. 3 "stretch test") with no damping,
#     strain-rate damping and Rayleigh damping through weft-run, kinetic energy
#     plotted to out/compare_swing/swing_kinetic_energy.png, frames (VTK/PVD/OBJ)
#     of each run under out/compare_swing/<model>/;
#  2. the rotating spring of 2018 Sec. 3.6, out/rotating_spring.{csv,png};
#  3. pictures of the cloth (scripts/render.sh, POV-Ray): the yarn sphere drop
#     (2017 Fig. 4) after 0.12 s, the two stacked tablecloths after 0.3 s and
#     the StVK sheet of stvk_swing.json after 0.6 s, out/render_*.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-demo}"
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_ENABLE_CUDA=OFF
cmake --build "$build" -j "$(nproc)" --target weft-run rotating_spring damping_ratio
mkdir -p "$root/out"
WEFT_BUILD="$build" bash "$root/scripts/compare_damping.sh" "$root/examples/scenes/swing.json" --out "$root/out/compare_swing"
"$build/examples/rotating_spring/rotating_spring" --damping strain-rate --beta 0.05 --csv "$root/out/rotating_spring.csv"
"$build/examples/rotating_spring/rotating_spring" --plot "$root/out/rotating_spring.png"
for run in "sphere_drop 0.12" "tablecloth 0.3" "stvk_swing 0.6"; do
  read -r scene duration <<< "$run"
  "$build/examples/weft_run/weft-run" "$root/examples/scenes/$scene.json" --duration "$duration" \
    --output-dir "$root/out/$scene" --quiet
  bash "$root/scripts/render.sh" "$root/out/$scene/${scene}_frames" "$root/out/render_$scene.png" \
    --width 640 --height 480 --scene "$root/examples/scenes/$scene.json"
done
echo "wrote $root/out/compare_swing/, $root/out/rotating_spring.{csv,png} and $root/out/render_*.png"
