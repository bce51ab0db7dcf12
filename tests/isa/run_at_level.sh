#!/bin/sh
# run_at_level.sh LEVEL PROBE TEST_BINARY [ARGS...]: runs TEST_BINARY with
# EMBER_CPU_CAPABILITY=LEVEL. Exit 77 (CTest: skipped) when this CPU lacks LEVEL, or when
# LEVEL is the one ember picks by itself here (the main test run covers it).
level=$1 probe=$2
shift 2
auto=$("$probe" | sed -n 's/^capability: //p')
if ! EMBER_CPU_CAPABILITY=$level "$probe" > /dev/null; then
  echo "this CPU cannot run the $level kernels: skipped"
  exit 77
fi
if [ "$auto" = "$level" ]; then
  echo "$level is this CPU's own level, covered by the main test run: skipped"
  exit 77
fi
EMBER_CPU_CAPABILITY=$level exec "$@"
