#!/usr/bin/env bash
# compare_taps.sh A B TOLERANCE: compares every tap file (and logits) of dump
# A (tbc run --dump) with the file of the same call and name in dump B, where
# B has one, with tbc-conformance --compare. Prints one line per file and
# how many it compared; exits 1 on any mismatch or when none were compared.
set -u
a=$1 b=$2 tol=$3 status=0 n=0
for dir in "$a"/*/; do
  call=$(basename "$dir")
  for f in "$dir"*.npy; do
    name=$(basename "$f")
    [ -e "$b/$call/$name" ] || continue
    n=$((n + 1))
    if ! out=$(tbc-conformance --compare "$f" "$b/$call/$name" --tolerance "$tol"); then
      status=1
    fi
    echo "$call $name: $out"
  done
done
echo "compared $n files"
[ "$n" -gt 0 ] || status=1
exit $status
