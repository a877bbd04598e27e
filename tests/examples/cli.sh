#!/usr/bin/env bash
# ctest examples.cli: every program's command line (CLI11, examples/cli_common.hpp):
# --help exits 0 and lists the program's options, --version prints weft's
# version, and an unknown option or a bad value exits non-zero with a
# message that names it.
#
#   cli.sh VERSION PROGRAM:OPTION,OPTION,... [PROGRAM:...]
set -u
version=$1
shift
status=0 checks=0
for spec in "$@"; do
  program=${spec%%:*}
  options=${spec#*:}
  name=$(basename "$program")
  help=$("$program" --help 2>&1) || { echo "FAILED: $name --help exited non-zero"; status=1; }
  for option in ${options//,/ }; do
    checks=$((checks + 1))
    grep -q -- "$option" <<< "$help" || { echo "FAILED: $name --help does not list $option"; status=1; }
  done
  out=$("$program" --version 2>&1) || { echo "FAILED: $name --version exited non-zero"; status=1; }
  [ "$out" = "weft $version" ] || { echo "FAILED: $name --version printed '$out'"; status=1; }
  if out=$("$program" --no-such-option 2>&1); then
    echo "FAILED: $name accepted --no-such-option"; status=1
  elif ! grep -q -- "--no-such-option" <<< "$out"; then
    echo "FAILED: $name's message does not name --no-such-option: $out"; status=1
  fi
  # A bad value for the first option listed (all of them take numbers or names).
  first=${options%%,*}
  if out=$("$program" "$first" not-a-value 2>&1); then
    echo "FAILED: $name accepted $first not-a-value"; status=1
  elif ! grep -q -- "$first" <<< "$out"; then
    echo "FAILED: $name's message does not name $first: $out"; status=1
  fi
  checks=$((checks + 3))
done
echo "$checks command-line checks on $# programs"
exit $status
