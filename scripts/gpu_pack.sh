#!/usr/bin/env bash
# Packs a CUDA build's programs for a GPU machine that has the CUDA driver but
# none of weft's build dependencies, in packs small enough to travel one at a
# time (a device call carries at most 64 MiB):
#
#   scripts/gpu_pack.sh [--build DIR] [--out DIR] [--limit MB]
#
#   --build DIR   the build directory, inside the repository (default build);
#                 it must have been configured with -DWEFT_ENABLE_CUDA=ON
#   --out DIR     where pack1/, pack2/, ... go (default gpu_packs)
#   --limit MB    the largest compressed pack (default 55)
#
# Packed: every CUDA test (DIR/tests/test_*_cuda), weft-run and weft-run-cuda,
# bench_yarn[_cuda] and bench_triangle[_cuda], stripped, at their paths
# relative to the repository root; and the shared libraries those programs
# load beyond the C/C++/OpenMP runtimes (CHOLMOD and its BLAS/LAPACK, which
# the CPU weft-run links: without them it exits with 127 there) in DIR/lib,
# which scripts/gpu_check.sh puts on LD_LIBRARY_PATH. The files are spread
# over the packs largest first, each into the first pack it fits. Each
# packN/bin.tgz unpacks with `tar xzf packN/bin.tgz` in the repository root;
# the unpacked build directory stays on the machine between calls while it
# is held, so the packs can be sent in consecutive calls.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=build
out=gpu_packs
limit=55
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu_pack.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
build_abs="$(cd "$build" && pwd)"
case "$build_abs" in
  "$root"/*) rel="${build_abs#"$root"/}" ;;
  *) echo "gpu_pack.sh: --build $build is not inside the repository $root" >&2; exit 2 ;;
esac
programs=()
for f in "$build_abs"/tests/test_*_cuda "$build_abs"/examples/weft_run/weft-run "$build_abs"/examples/weft_run/weft-run-cuda \
         "$build_abs"/benchmarks/bench_yarn "$build_abs"/benchmarks/bench_yarn_cuda \
         "$build_abs"/benchmarks/bench_triangle "$build_abs"/benchmarks/bench_triangle_cuda; do
  [ -x "$f" ] && programs+=("$f")
done
if [ ${#programs[@]} -eq 0 ]; then
  echo "gpu_pack.sh: no programs found in $build_abs (build the CUDA tests, weft-run-cuda and the benchmarks first)" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$rel/lib"
for f in "${programs[@]}"; do
  dest="$stage/$rel/${f#"$build_abs"/}"
  mkdir -p "$(dirname "$dest")"
  strip -o "$dest" "$f"
  # Libraries beyond the runtimes every Linux machine with a CUDA driver has.
  ldd "$f" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libgomp.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
      *) cp -L -n "$lib" "$stage/$rel/lib/" ;;
    esac
  done
done
# Compressed size of each file, then first-fit decreasing into the packs.
mapfile -t sized < <(cd "$stage" && find "$rel" -type f -print0 | xargs -0 -I{} sh -c 'echo "$(gzip -c "{}" | wc -c) {}"' | sort -rn)
limit_bytes=$((limit * 1000 * 1000))
declare -a pack_size=() pack_files=()
for entry in "${sized[@]}"; do
  size=${entry%% *}; file=${entry#* }
  if [ "$size" -gt "$limit_bytes" ]; then
    echo "gpu_pack.sh: $file alone is $size bytes compressed, over --limit $limit MB" >&2; exit 1
  fi
  placed=0
  for i in "${!pack_size[@]}"; do
    if [ $((pack_size[i] + size)) -le "$limit_bytes" ]; then
      pack_size[i]=$((pack_size[i] + size)); pack_files[i]+="$file"$'\n'; placed=1; break
    fi
  done
  if [ $placed -eq 0 ]; then pack_size+=("$size"); pack_files+=("$file"$'\n'); fi
done
rm -rf "$out"
for i in "${!pack_size[@]}"; do
  dir="$out/pack$((i + 1))"
  mkdir -p "$dir"
  printf '%s' "${pack_files[i]}" > "$dir/files.txt"
  (cd "$stage" && tar czf - -T -) < "$dir/files.txt" > "$dir/bin.tgz"
  echo "$dir/bin.tgz: $(stat -c %s "$dir/bin.tgz") bytes, $(wc -l < "$dir/files.txt") files"
done
