#!/usr/bin/env bash
# ctest examples.bench_yarn.huge_pages: a program that calls
# weft::run_with_huge_pages (device.hpp) runs itself again with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 where the kernel grants transparent
# huge pages on request ("[madvise]") and glibc is 2.35 or later, and not
# where WEFT_HUGE_PAGES=0; a tunable set before it starts is kept.
# bench_yarn reports which in its JSON ("huge_pages").
#
#   huge_pages.sh BENCH_YARN WORK_DIR
set -u
bench=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
checks=0
fail() { echo "FAILED: $*"; exit 1; }
run() {  # run NAME [VAR=VALUE ...]: bench_yarn's JSON in $work/NAME.json
  local name=$1
  shift
  env "$@" OMP_NUM_THREADS=1 "$bench" --sizes 6 --steps 1 --warmup 0 --no-eigen --no-cholmod --spmv-repeats 0 \
    > "$work/$name.json" 2> "$work/$name.err" || { cat "$work/$name.err"; fail "bench_yarn ($name)"; }
}
field() { grep -o '"huge_pages": [a-z]*' "$work/$1.json" | sed 's/.*: //'; }
expect() {  # expect NAME VALUE WHY
  checks=$((checks + 1))
  [ "$(field "$1")" = "$2" ] || fail "$1: \"huge_pages\" is '$(field "$1")', expected $2 ($3)"
}

glibc=$(getconf GNU_LIBC_VERSION 2> /dev/null | awk '{print $2}')
modes=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null)
expected=false
if [ -n "$glibc" ] && printf '%s\n%s\n' 2.35 "$glibc" | sort -V -C && [[ "$modes" == *"[madvise]"* ]]; then
  expected=true
fi
echo "glibc ${glibc:-none}, transparent huge pages: ${modes:-not available}; expected huge_pages: $expected"

run default -u GLIBC_TUNABLES -u WEFT_HUGE_PAGES -u WEFT_HUGE_PAGES_RERUN
expect default $expected "the re-run where the machine allows it"
run off -u GLIBC_TUNABLES WEFT_HUGE_PAGES=0
expect off false "WEFT_HUGE_PAGES=0"
run kept -u WEFT_HUGE_PAGES GLIBC_TUNABLES=glibc.malloc.arena_max=4
expect kept $expected "another tunable set before: hugetlb added to it"
run preset -u WEFT_HUGE_PAGES GLIBC_TUNABLES=glibc.malloc.hugetlb=1
expect preset true "set before it starts: no re-run needed"
# The steps' results do not depend on the pages (the same PCG iterations).
for name in off preset; do
  checks=$((checks + 1))
  a=$(grep -o '"pcg_iterations": [0-9.]*' "$work/default.json")
  b=$(grep -o '"pcg_iterations": [0-9.]*' "$work/$name.json")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "pcg_iterations differ: default '$a', $name '$b'"
done
echo "huge pages: $checks checks passed"
