#!/usr/bin/env bash
# Installs the Debian packages tbc builds against (LLVM/MLIR 22, fmt, GoogleTest, Ninja)
# and those of its Python package and tests (pybind11, Python headers, NumPy, pytest).
# Idempotent: does nothing when everything is already present.
set -euo pipefail
pkgs=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libfmt-dev libgtest-dev ninja-build cmake
      pybind11-dev python3-dev python3-numpy python3-pytest)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
