#!/usr/bin/env bash
# Installs every Debian package that ember's build, tests, benchmarks and examples need.
# Idempotent: exits quickly when everything is present. Run as root (CI and the dev
# machines are root); otherwise it prints the exact command to run.
set -euo pipefail

PACKAGES=(
  # toolchain and build
  g++ cmake make pkg-config
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  # kernels: BLAS (OpenMP build, shares OpenMP threads with ours) and vector math
  libopenblas-openmp-dev libsleef-dev
  # convolution: oneDNN (OpenMP runtime), PyTorch's CPU convolution library
  libdnnl-dev
  # the reference implementation for parity tests and benchmarks: PyTorch 1.13
  libtorch-dev python3-torch python3-numpy
  # data: gzip'd IDX files, and the Fashion-MNIST data set for the main job
  zlib1g-dev dataset-fashion-mnist
  # text for the second main job (examples/char_lm): the fortune cookie files
  fortunes
  # Python bindings
  pybind11-dev python3-dev python3-pytest python3-venv python3-setuptools
  # ONNX export (protobuf classes of onnx.proto) and the independent checks of its files:
  # the ONNX checker and OpenCV's dnn runtime
  libonnx-dev libprotobuf-dev python3-onnx python3-opencv
  # ember-serve: Boost.Beast/Asio (header-only) for HTTP; promtool checks its metrics,
  # chromium renders its status page in the tests; wrk and a FastAPI + uvicorn server of
  # the same model are the load test's tools and baseline (bench/serve)
  libboost-dev prometheus chromium wrk python3-fastapi python3-uvicorn
  # distributed training: Gloo (collectives over TCP, rendezvous stores)
  libgloo-dev
  # the alternative backend: MPI (Open MPI; mpirun launches the ranks, and the tests)
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: missing Debian packages: ${missing[*]}"
cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: not root; run this as root, then try again:"
  echo "  sudo sh -c '$cmd'"
  exit 1
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: done"
