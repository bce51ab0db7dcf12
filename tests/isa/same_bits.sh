#!/bin/sh
# same_bits.sh PROBE: runs `PROBE --bits` at every CPU level this CPU has and checks that
# each prints the same hashes (kernels with fixed lanes give the same bits at every level).
probe=$1
ref="" ref_level="" levels=0
for level in default avx2 avx512; do
  if ! EMBER_CPU_CAPABILITY=$level "$probe" > /dev/null 2>&1; then
    echo "$level: not available on this CPU"
    continue
  fi
  out=$(EMBER_CPU_CAPABILITY=$level "$probe" --bits | grep -v '^capability:') || exit 1
  echo "$level: $out"
  levels=$((levels + 1))
  if [ -z "$ref_level" ]; then
    ref=$out ref_level=$level
  elif [ "$out" != "$ref" ]; then
    echo "the $level kernels give other bits than the $ref_level kernels"
    exit 1
  fi
done
[ "$levels" -ge 2 ] || { echo "only one level on this CPU: nothing to compare"; exit 77; }
echo "same bits at $levels levels"
