#!/usr/bin/env bash
# Installs what building and testing zoc needs on a fresh Debian 12 machine (the developers'
# and CI's machines): the compiler's libraries, GoogleTest, and Debian's PyTorch for the
# reference data (and its LibTorch, for the TorchScript frontend). Idempotent: apt-get runs
# only when a package is missing. Extra package names on the command line are installed the
# same way (tools/dev/fuzz.sh: tools/setup.sh clang-14 libclang-rt-14-dev).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev libfmt-dev libcli11-dev libgtest-dev zlib1g-dev libssl-dev
  python3 python3-numpy python3-torch python3-torchvision llvm-14-tools python3-clang-14
  clang-format-14
  libtorch-dev
  libonnx-dev python3-onnx libonnx-testdata
  llvm-14-dev libclang-cpp14-dev libclang-14-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
