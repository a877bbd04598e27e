#!/usr/bin/env bash
# Runs a weft-run scene three times -- no damping, the scene's own strain-rate
# damping, Rayleigh damping with beta -- and plots the kinetic energy of the
# three runs over time (like 2017 Fig. 3). Needs bash, awk and gnuplot.
#
#   scripts/compare_damping.sh SCENE.json [--beta B] [--duration T] [--out DIR]
#
#   --beta B      Rayleigh beta (s); default by scene file name: hang, swing 4e-3,
#                 flap 3e-2 (2017 Table 1), stvk_hang, stvk_swing 0.15 (2018
#                 Fig. 3); required for other scenes
#   --duration T  simulated time (s), overrides the scene's duration
#   --out DIR     output directory (default: out/compare_<scene> under the repo root)
#
# Writes DIR/<scene>_none.csv, DIR/<scene>_strain-rate.csv,
# DIR/<scene>_rayleigh.csv (weft-run's CSV), the frames of each run under
# DIR/<model>/, DIR/<scene>_kinetic_energy.png and DIR/summary.txt, and prints
# one summary line per run. Exit status: 0 all runs done, 1 a run failed
# (the plot shows its curve up to the failed step), 2 bad arguments.
#
# weft-run is taken from $WEFT_BUILD (default: build-demo under the repo root)
# and built there when missing ($WEFT_JOBS parallel jobs, default: all cores).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "compare_damping.sh: $*" >&2; exit 2; }

scene="" beta="" duration="" out=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --beta) [ $# -ge 2 ] || die "--beta needs a value"; beta="$2"; shift 2 ;;
        --duration) [ $# -ge 2 ] || die "--duration needs a value"; duration="$2"; shift 2 ;;
        --out) [ $# -ge 2 ] || die "--out needs a value"; out="$2"; shift 2 ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$scene" ] || die "only one scene file is taken (got '$scene' and '$1')"; scene="$1"; shift ;;
    esac
done
[ -n "$scene" ] || { usage >&2; die "missing SCENE.json"; }
[ -f "$scene" ] || die "no such scene file: $scene"
scene="$(cd "$(dirname "$scene")" && pwd)/$(basename "$scene")"
name="$(basename "$scene" .json)"

if [ -z "$beta" ]; then
    case "$name" in
        hang|swing) beta=4e-3 ;;
        flap) beta=3e-2 ;;
        stvk_hang|stvk_swing) beta=0.15 ;;
        *) die "no default Rayleigh beta for scene '$name': pass --beta B" ;;
    esac
fi
is_positive() { awk -v x="$1" 'BEGIN { exit !(x ~ /^[0-9.eE+-]+$/ && x + 0 > 0) }'; }
is_positive "$beta" || die "invalid --beta '$beta': expected a positive number"
[ -z "$duration" ] || is_positive "$duration" || die "invalid --duration '$duration': expected a positive number"

# The CSV path of the scene's "output" object (weft-run resolves it against --output-dir).
csv_name="$(tr -d '\n' < "$scene" | grep -o '"csv"[[:space:]]*:[[:space:]]*"[^"]*"' | head -n 1 |
            sed 's/.*:[[:space:]]*"\(.*\)"/\1/')" || true
[ -n "$csv_name" ] || die "$scene has no output.csv: weft-run would write no energies"

out="${out:-$root/out/compare_$name}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

build="${WEFT_BUILD:-$root/build-demo}"
runner="$build/examples/weft_run/weft-run"
if [ ! -x "$runner" ]; then
    echo "compare_damping.sh: building weft-run in $build" >&2
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF -DWEFT_ENABLE_CUDA=OFF >&2
    cmake --build "$build" -j "${WEFT_JOBS:-$(nproc)}" --target weft-run >&2
fi
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

# KE statistics of one CSV: end, peak, time of peak, mean over the last 20 %.
ke_stats() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "kinetic_energy") c = i; next }
             c { n++; t[n] = $1; k[n] = $c + 0 }
             END {
                 if (!c || n == 0) { print "nan nan nan nan"; exit }
                 p = 1; for (i = 1; i <= n; ++i) if (k[i] > k[p]) p = i
                 first = int(0.8 * n) + 1; s = 0; for (i = first; i <= n; ++i) s += k[i]
                 printf "%.6e %.6e %.6g %.6e\n", k[n], k[p], t[p], s / (n - first + 1)
             }' "$1"
}

models=(none strain-rate rayleigh)
failed=0
: > "$out/summary.txt"
for model in "${models[@]}"; do
    args=("$scene" --output-dir "$out/$model" --quiet --damping "$model")
    [ "$model" != rayleigh ] || args+=(--beta "$beta")
    [ -z "$duration" ] || args+=(--duration "$duration")
    rm -rf "${out:?}/$model"
    mkdir -p "$out/$model"
    start=$(date +%s.%N)
    if ! "$runner" "${args[@]}"; then
        echo "compare_damping.sh: weft-run failed for --damping $model (partial CSV kept)" >&2
        status=failed failed=1
    else
        status=ok
    fi
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    [ -f "$out/$model/$csv_name" ] || die "weft-run wrote no CSV for --damping $model"
    mv "$out/$model/$csv_name" "$out/${name}_$model.csv"
    read -r ke_end ke_peak t_peak ke_tail < <(ke_stats "$out/${name}_$model.csv")
    if [ "$model" = none ]; then
        ref_end=$ke_end ref_peak=$ke_peak ref_tail=$ke_tail
    fi
    label=$model
    [ "$model" != rayleigh ] || label="rayleigh(beta=$beta)"
    line=$(awk -v n="$name" -v m="$label" -v e="$ke_end" -v p="$ke_peak" -v tp="$t_peak" -v tl="$ke_tail" \
               -v re="$ref_end" -v rp="$ref_peak" -v rt="$ref_tail" -v w="$wall" -v st="$status" '
        function ratio(a, b) { return (b + 0 > 0) ? sprintf("%.3g", a / b) : "nan" }
        BEGIN { printf "%s %-22s KE end %.3e J, peak %.3e J (t=%g s), last-20%% mean %.3e J | vs none: end %s, peak %s, last-20%% %s | %s s wall%s\n",
                       n, m, e, p, tp, tl, ratio(e, re), ratio(p, rp), ratio(tl, rt), w, (st == "ok" ? "" : " | RUN FAILED") }')
    echo "$line" | tee -a "$out/summary.txt"
done

# Plot. pngcairo where gnuplot has it, else the libgd png terminal.
if gnuplot -e 'set terminal' 2>&1 | grep -q '^ *pngcairo '; then
    terminal="pngcairo size 900,600 font ',11'"
else
    terminal="png size 900,600"
fi
png="$out/${name}_kinetic_energy.png"
gnuplot <<EOF
set terminal $terminal
set output '$png'
set datafile separator ','
set key top right
set grid
set xlabel 'time (s)'
set ylabel 'kinetic energy (J)'
set format y '%.1e'
set title "$name: kinetic energy (no damping, strain-rate, Rayleigh beta = $beta s)" noenhanced
plot '$out/${name}_none.csv' using 1:2 with lines lw 2 lc rgb '#000000' title 'no damping', \
     '$out/${name}_strain-rate.csv' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'strain-rate (scene k_d)', \
     '$out/${name}_rayleigh.csv' using 1:2 with lines lw 2 lc rgb '#d62728' title 'Rayleigh, beta = $beta s'
EOF
echo "wrote $out/${name}_{none,strain-rate,rayleigh}.csv, $png and $out/summary.txt"
[ "$failed" = 0 ] || { echo "compare_damping.sh: at least one run failed (see above)" >&2; exit 1; }
