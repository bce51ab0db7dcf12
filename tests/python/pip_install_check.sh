#!/bin/sh
# pip install . into a fresh venv (Debian's python3-venv, --system-site-packages for numpy),
# reusing the build tree ($2), then import ember from outside the source tree and check
# that the installed extension loads the libember installed next to it.
set -eu
SRC=$1
BUILD=$2
VENV=$BUILD/python-venv-check
rm -rf "$VENV"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
cd "$SRC"
EMBER_BUILD_DIR=$BUILD "$VENV/bin/pip" install --no-build-isolation --no-deps --quiet . 
cd /
"$VENV/bin/python" - "$VENV" <<'PY'
import sys
venv = sys.argv[1]
import ember
assert ember.__file__.startswith(venv), ember.__file__
import ember.distributed.checkpoint, ember.distributed.fsdp, ember.distributed.optim  # the subpackages are installed
x = ember.arange(6, dtype=ember.float32).reshape(2, 3)
assert (x @ x.t()).tolist() == [[5.0, 14.0], [14.0, 50.0]]
maps = open("/proc/self/maps").read()
libs = {line.split()[-1] for line in maps.splitlines() if "libember.so" in line}
assert libs and all(l.startswith(venv) for l in libs), libs
print("installed ember imports from", ember.__file__, "with", sorted(libs)[0])
PY
