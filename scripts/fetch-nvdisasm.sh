#!/usr/bin/env bash
# Prints the path of an nvdisasm for test/e2e/cuda-sass.test, which reads
# the kernels' machine code (HMMA in the tensor-core kernels). CUDA's Debian
# and runfile toolkits on our machines ship ptxas but neither cuobjdump nor
# nvdisasm, so the wheel NVIDIA publishes on PyPI is fetched once into
# ~/.cache/tbc (a few MB). Prints nothing, and exits 0, where there is no
# network: the test is then reported unsupported, not failed.
set -uo pipefail
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tbc/nvdisasm
tool="$cache/nvidia/cu13/bin/nvdisasm"
if [ ! -x "$tool" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" \
       'nvidia-cuda-nvdisasm>=13,<14' >/dev/null 2>&1; then
    mkdir -p "$cache"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
      "$tmp"/nvidia_cuda_nvdisasm-*.whl "$cache" && chmod +x "$tool"
  else
    echo "fetch-nvdisasm: PyPI not reachable; the SASS test will be unsupported" >&2
  fi
fi
[ -x "$tool" ] && echo "$tool"
exit 0
