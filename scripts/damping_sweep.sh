#!/usr/bin/env bash
# Damping ratio versus damping coefficient (2017 Fig. 6): runs the stretch
# calibration scene (examples/scenes/hang.json) and the stretch test scene
# (examples/scenes/swing.json) with strain-rate damping for a range of stretch
# k_d and with Rayleigh damping for a range of beta, plus once undamped, fits
# the damping ratio zeta of each run with damping_ratio (2017 Eq. 24) and
# plots zeta against the coefficient. Needs bash, awk and gnuplot.
#
#   scripts/damping_sweep.sh [--out DIR] [--duration T] [--column NAME]
#                            [--kd "K1 K2 ..."] [--beta "B1 B2 ..."]
#                            [--hang-start T] [--swing-start T] [--replot]
#
#   --out DIR        output directory (default: out/damping_sweep under the repo root)
#   --duration T     simulated time per run (s); default: the scenes' duration (1 s)
#   --column NAME    weft-run CSV column to fit (default: kinetic_energy)
#   --kd LIST        stretch k_d values (N s), default "1e-8 3.16e-8 1e-7 3.16e-7 1e-6"
#   --beta LIST      Rayleigh beta values (s), default "1e-4 3.16e-4 1e-3 3.16e-3 1e-2"
#   --hang-start T   fit samples with t >= T only (damping_ratio --start), hang; default 0
#   --swing-start T  the same for swing; default 0.1 (after the first fall from horizontal)
#   --replot         run nothing: redraw DIR/damping_sweep.png from DIR/damping_sweep.csv
#                    (--column and --duration only label the plot)
#
# Writes DIR/damping_sweep.csv (model,scene,coefficient,zeta,omega_n; model
# "none" has coefficient 0; a failed fit has zeta and omega_n "nan"),
# DIR/damping_sweep.png, DIR/fits.log (damping_ratio's output per run) and
# the weft-run CSV of every run under DIR/runs/.
#
# weft-run and damping_ratio are taken from $WEFT_BUILD (default: build-demo
# under the repo root) and built there when missing ($WEFT_JOBS parallel jobs,
# default: all cores).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '9,21p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "damping_sweep.sh: $*" >&2; exit 2; }

out="" duration="" column=kinetic_energy
kd_values="1e-8 3.16e-8 1e-7 3.16e-7 1e-6"
beta_values="1e-4 3.16e-4 1e-3 3.16e-3 1e-2"
hang_start=0 swing_start=0.1 replot=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --replot) replot=1; shift ;;
        --out|--duration|--column|--kd|--beta|--hang-start|--swing-start)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --out) out="$2" ;;
                --duration) duration="$2" ;;
                --column) column="$2" ;;
                --kd) kd_values="$2" ;;
                --beta) beta_values="$2" ;;
                --hang-start) hang_start="$2" ;;
                --swing-start) swing_start="$2" ;;
            esac
            shift 2 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
is_number() { awk -v x="$1" 'BEGIN { exit !(x ~ /^[0-9.eE+-]+$/ && x + 0 == x + 0) }'; }
is_positive() { is_number "$1" && awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }
[ -z "$duration" ] || is_positive "$duration" || die "invalid --duration '$duration': expected a positive number"
for v in $kd_values; do is_positive "$v" || die "invalid --kd value '$v': expected a positive number"; done
for v in $beta_values; do is_positive "$v" || die "invalid --beta value '$v': expected a positive number"; done
[ -n "$kd_values" ] && [ -n "$beta_values" ] || die "--kd and --beta need at least one value each"
is_number "$hang_start" || die "invalid --hang-start '$hang_start'"
is_number "$swing_start" || die "invalid --swing-start '$swing_start'"

out="${out:-$root/out/damping_sweep}"
mkdir -p "$out/runs"
out="$(cd "$out" && pwd)"

csv="$out/damping_sweep.csv"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ "$replot" = 0 ]; then
    build="${WEFT_BUILD:-$root/build-demo}"
    runner="$build/examples/weft_run/weft-run"
    fitter="$build/examples/damping_ratio/damping_ratio"
    if [ ! -x "$runner" ] || [ ! -x "$fitter" ]; then
        echo "damping_sweep.sh: building weft-run and damping_ratio in $build" >&2
        cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_ENABLE_CUDA=OFF >&2
        cmake --build "$build" -j "${WEFT_JOBS:-$(nproc)}" --target weft-run damping_ratio >&2
    fi
    export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

    scenes_dir="$root/examples/scenes"

    # A copy of scene $1 with the strain-rate stretch k_d set to $2 (the
    # "damping" object of the shipped scenes is on one line).
    scene_with_kd() {
        local src="$scenes_dir/$1.json" dst="$work/$1_kd_$2.json"
        sed '/"damping"[[:space:]]*:/ s/"stretch"[[:space:]]*:[[:space:]]*[-+0-9.eE]*/"stretch": '"$2"'/' "$src" > "$dst"
        grep -q '"damping"[^}]*"model"[[:space:]]*:[[:space:]]*"strain-rate"[^}]*"stretch": '"$2"'[,}[:space:]]' "$dst" ||
            die "could not set the stretch k_d in $src (expected \"damping\": {\"model\": \"strain-rate\", \"stretch\": ...} on one line)"
        echo "$dst"
    }

    echo "model,scene,coefficient,zeta,omega_n" > "$csv"
    : > "$out/fits.log"
    sweep_start=$(date +%s)

    # run_one MODEL SCENE COEFFICIENT: one weft-run, one fit, one CSV row.
    run_one() {
        local model="$1" scene="$2" coef="$3" file args start tag fit zeta omega
        case "$model" in
            strain-rate) file="$(scene_with_kd "$scene" "$coef")"; args=(--damping strain-rate) ;;
            rayleigh) file="$scenes_dir/$scene.json"; args=(--damping rayleigh --beta "$coef") ;;
            none) file="$scenes_dir/$scene.json"; args=(--damping none) ;;
        esac
        [ -z "$duration" ] || args+=(--duration "$duration")
        tag="${scene}_${model}_${coef}"
        rm -rf "${work:?}/run"
        mkdir -p "$work/run"
        local t0; t0=$(date +%s)
        if ! "$runner" "$file" --output-dir "$work/run" --quiet "${args[@]}"; then
            echo "damping_sweep.sh: weft-run failed for $tag (the partial CSV is fitted)" >&2
        fi
        [ -f "$work/run/$scene.csv" ] || die "weft-run wrote no $scene.csv for $tag"
        mv "$work/run/$scene.csv" "$out/runs/$tag.csv"
        start=$hang_start
        [ "$scene" != swing ] || start=$swing_start
        if fit=$("$fitter" --csv "$out/runs/$tag.csv" --column "$column" --start "$start" 2>&1); then
            zeta=$(echo "$fit" | sed -n 's/.*"zeta": \([^,]*\),.*/\1/p')
            omega=$(echo "$fit" | sed -n 's/.*"omega_n": \([^,]*\),.*/\1/p')
        else
            zeta=nan omega=nan
        fi
        echo "$tag: $fit" >> "$out/fits.log"
        echo "$model,$scene,$coef,$zeta,$omega" >> "$csv"
        printf '%-12s %-6s %-9s zeta %-12s omega_n %-12s (%s s wall)\n' "$model" "$scene" "$coef" "$zeta" "$omega" \
            "$(( $(date +%s) - t0 ))"
    }

    for scene in hang swing; do
        run_one none "$scene" 0
        for kd in $kd_values; do run_one strain-rate "$scene" "$kd"; done
        for beta in $beta_values; do run_one rayleigh "$scene" "$beta"; done
    done
else
    [ -f "$csv" ] || die "--replot: no $csv"
    sweep_start=$(date +%s)
    # the coefficients actually in the CSV, for the x ranges
    kd_values=$(awk -F, 'NR > 1 && $1 == "strain-rate" { printf "%s ", $3 }' "$csv")
    beta_values=$(awk -F, 'NR > 1 && $1 == "rayleigh" { printf "%s ", $3 }' "$csv")
    [ -n "$kd_values" ] || kd_values=1e-7
    [ -n "$beta_values" ] || beta_values=1e-3
fi

# Plot: zeta against k_d (strain-rate) and against beta (Rayleigh), log x,
# the undamped zeta of each scene as a dashed line.
series() { awk -F, -v m="$1" -v s="$2" 'NR > 1 && $1 == m && $2 == s && $4 != "nan" { print $3, $4 }' "$csv"; }
for scene in hang swing; do
    series strain-rate "$scene" > "$work/strain-rate_$scene.dat"
    series rayleigh "$scene" > "$work/rayleigh_$scene.dat"
done
zeta_none() {
    awk -F, -v s="$1" 'NR > 1 && $1 == "none" && $2 == s { z = $4 } END { print (z == "" || z == "nan") ? "NaN" : z }' "$csv"
}
z_hang=$(zeta_none hang) z_swing=$(zeta_none swing)
# x ranges from the coefficient lists, so that a panel with no successful fit still plots
xrange() { echo "$1" | tr ' ' '\n' | awk 'NF { v = $1 + 0; if (!n++ || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
                                     END { printf "[%g:%g]", lo / 1.5, hi * 1.5 }'; }
kd_range=$(xrange "$kd_values") beta_range=$(xrange "$beta_values")
# one zeta scale for both panels
ymax=$(awk -F, 'NR > 1 && $4 != "nan" && $4 + 0 > m { m = $4 + 0 } END { m = 1.1 * m; if (m < 0.1) m = 0.1; if (m > 1.05) m = 1.05; printf "%.3g", m }' "$csv")
if gnuplot -e 'set terminal' 2>&1 | grep -q '^ *pngcairo '; then
    terminal="pngcairo size 1200,500 font ',11'"
else
    terminal="png size 1200,500"
fi
# One panel: zeta of both scenes for one damping model, and their undamped zeta (dashed).
panel() {
    echo "plot '$work/$1_hang.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'hang (calibration)', \\"
    echo "     '$work/$1_swing.dat' using 1:2 with linespoints lw 2 pt 5 lc rgb '#ff7f0e' title 'swing (test)', \\"
    echo "     $z_hang with lines dt 2 lc rgb '#1f77b4' notitle, \\"
    echo "     $z_swing with lines dt 2 lc rgb '#ff7f0e' notitle"
}
duration_text="${duration:-scene duration}"
[ -z "$duration" ] || duration_text="$duration s"
gnuplot <<EOF
set terminal $terminal
set output '$out/damping_sweep.png'
set multiplot layout 1,2 title "damping ratio of the $column fit ($duration_text per run); dashed: no damping" noenhanced
set logscale x
set format x '10^{%L}'
set grid
set key top left
set ylabel 'damping ratio zeta'
set yrange [0:$ymax]
set xlabel 'stretch k_d (N s)'
set xrange $kd_range
set title 'strain-rate damping'
$(panel strain-rate)
set xlabel 'Rayleigh beta (s)'
set xrange $beta_range
set title 'Rayleigh damping'
$(panel rayleigh)
unset multiplot
EOF
echo "wrote $csv, $out/damping_sweep.png and $out/fits.log ($(( $(date +%s) - sweep_start )) s)"
