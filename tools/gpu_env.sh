# shellcheck shell=bash
# The GPU machine's environment, sourced by every GPU script (tests/gpu, tests/train, tools/train,
# tools/harness) so that all of them build and run with the same tools: PyTorch's virtual
# environment (/opt/torch/.venv: python, cmake, ninja), the CUDA toolkit, and the cuDNN that
# PyTorch loads (the wheel's), so that zoc's generated code and the PyTorch baselines run one
# library. Not a command: it only defines gpu_env, which each script calls once.
#
#   . "$ROOT/tools/gpu_env.sh"
#   gpu_env [PYTHON [LINK_DIR]]
#
# PYTHON: the script's own override (ZOC_PYTHON, TRAIN_PYTHON, HARNESS_PYTHON; empty or absent:
# the venv's python, or python3 on PATH where the venv has none). Sets VENV, PY, NVCC; CUDNN_DIR
# (the wheel's nvidia/cudnn folder), CUDNN_INC and CUDNN_LIB (its headers and libcudnn.so.9,
# unless ZOC_CUDNN_INCLUDE_DIR / ZOC_CUDNN_LIBRARY name another cuDNN), CUDNN_LIB_DIR; and
# GPU_CMAKE_ARGS, what configures a generated folder against them for sm_90 (H100, H200). Puts
# the venv and the toolkit first on PATH and CUDNN_LIB_DIR first on LD_LIBRARY_PATH: it also
# holds the engine libraries libcudnn.so.9 loads at run time. The wheel ships only
# libcudnn.so.9, which is linked by full path; with LINK_DIR, LINK_DIR/cudnn_link/libcudnn.so
# points at it for builds that link with -lcudnn, and that folder comes next on LD_LIBRARY_PATH.
gpu_env() {
  VENV=/opt/torch/.venv
  PY=${1:-$VENV/bin/python3}
  [ -x "$PY" ] || PY=$(command -v python3)
  export PATH="$VENV/bin:/usr/local/cuda/bin:$PATH"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  CUDNN_DIR=$("$PY" -c 'import nvidia.cudnn as c; print(list(c.__path__)[0])' 2>/dev/null ||
              echo "$VENV/lib/python3.12/site-packages/nvidia/cudnn")
  CUDNN_LIB=${ZOC_CUDNN_LIBRARY:-$CUDNN_DIR/lib/libcudnn.so.9}
  CUDNN_INC=${ZOC_CUDNN_INCLUDE_DIR:-$CUDNN_DIR/include}
  CUDNN_LIB_DIR=$(dirname "$CUDNN_LIB")
  local front=$CUDNN_LIB_DIR
  if [ -n "${2:-}" ]; then
    mkdir -p "$2/cudnn_link" && ln -sf "$CUDNN_LIB" "$2/cudnn_link/libcudnn.so"
    front=$front:$2/cudnn_link
  fi
  export LD_LIBRARY_PATH="$front${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  GPU_CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
                  -DCUDNN_INCLUDE_DIR="$CUDNN_INC" -DCUDNN_LIBRARY="$CUDNN_LIB")
}
