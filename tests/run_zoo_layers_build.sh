#!/usr/bin/env bash
# The zoo's layers (tests/backend/zoo_layers.yaml), zoc's depthwise kernel in all its forms
# (tests/backend/depthwise_layers.yaml), the segmentation decoders' layers
# (tests/backend/dense_layers.yaml), every activation in a convolution's epilogue
# (tests/backend/epilogue_layers.yaml) and a tensor and a constant
# (tests/backend/constant_operand_layers.yaml, fp16 only) compiled by zoc in fp32 (NCHW) and
# fp16 (NHWC) and built with the local CUDA toolkit and cuDNN under -Werror: the generated
# constants, steps and kernel wrappers type-check and link for both layouts (no GPU needed;
# tests/gpu/zoo_check.sh runs them). The host code builds at -O1, not the folders' default -O3:
# the same type checks and flow warnings in half the compile time (tools/dev/build_generated.sh
# builds generated/ as users do). Every folder builds its library (the model's C++ and its
# _kernels.cu), whose objects must define every zoc symbol they use (link_check: what linking
# checks of the generated code); the runner, main.cpp (zoc::run_main, the same code for every
# model), is compiled and linked once per precision, for dense_layers: with seven outputs, the
# runner's per-output code stays live for the flow warnings, where a one-output model's
# optimizer drops it (generated_builds builds the runner of one-output models).
# --sample (CI): every model in fp16, zoo_layers in fp32 too, the graph-API depthwise variant;
# the other fp32 folders and the legacy-API depthwise build only without it (`ctest -L slow`:
# zoo_layers_build_all), about a minute less of nvcc on two cores.
# Usage: tests/run_zoo_layers_build.sh ZOC SCRATCH [--sample]
set -euo pipefail
zoc=$1 scratch=$2 sample=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
rm -rf "$scratch" && mkdir -p "$scratch"

# link_check LIBRARY: every zoc:: or zoc_model:: symbol that an object of the static LIBRARY uses
# is defined by one of its objects, and no symbol is defined by two: a kernel wrapper the model's
# C++ calls (zoc::model_kernels::) that its _kernels.cu lacks, or defines with other parameter
# types, fails here as it would fail to link. The CUDA and cuDNN libraries' symbols are left to
# the linker (the runners linked below).
link_check() {
  local lib=$1 bad
  [ -f "$lib" ] || { echo "no $lib"; exit 1; }
  bad=$(nm -P "$lib" | awk '
    NF == 1 && /:$/ { next }                # an archive member
    $2 == "U" { used[$1] = 1; next }
    $2 ~ /^[A-TV-Zu]$/ { defined[$1] = 1 }  # global (weak or not), not undefined
    $2 ~ /^[TDBRGS]$/ { strong[$1]++ }      # a second definition fails to link
    END {
      for (s in used) if (!(s in defined)) print "undefined: " s
      for (s in strong) if (strong[s] > 1) print "defined " strong[s] " times: " s
    }' | c++filt)
  bad=$(grep -E '(^|[^A-Za-z0-9_])zoc(_model)?::|^defined ' <<<"$bad" || true)
  [ -z "$bad" ] || { printf '%s: would not link:\n%s\n' "$lib" "$bad"; exit 1; }
}

# build MODEL NAME ZOC_OPTION...: compiles tests/backend/MODEL.yaml into $scratch/NAME_src, builds
# its library into $scratch/NAME_build and checks it (link_check); for the NAMEs in $runners, the
# runner MODEL_main as well.
runners="dense_layers_fp32 dense_layers_fp16"
sampled="zoo_layers_fp32 zoo_layers_fp16 depthwise_layers_fp16 epilogue_layers_fp16"
sampled+=" dense_layers_fp16 constant_operand_layers_fp16 depthwise_layers_fp16_cudnn"
build() {
  local m=$1 name=$2 target
  shift 2
  case " $sampled " in *" $name "*) ;; *) [ -z "$sample" ] || return 0 ;; esac
  "$zoc" compile "$here/backend/$m.yaml" "$@" -o "$scratch/${name}_src" >/dev/null
  cmake -S "$scratch/${name}_src" -B "$scratch/${name}_build" -G Ninja \
        -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDNN_ROOT="${CUDNN_ROOT:-$cuda}" \
        -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -Wall -Wextra -Werror" >/dev/null
  case " $runners " in *" $name "*) target=all ;; *) target=$m ;; esac
  cmake --build "$scratch/${name}_build" -j "$(nproc)" --target "$target" >/dev/null
  link_check "$scratch/${name}_build/lib$m.a"
  if [ "$target" = all ]; then
    [ -x "$scratch/${name}_build/${m}_main" ] || { echo "no ${m}_main for $name"; exit 1; }
    echo "$name: compiled, built and linked its runner"
  else
    echo "$name: compiled and built, its library links"
  fi
}

for m in zoo_layers depthwise_layers epilogue_layers dense_layers; do
  for p in fp32 fp16; do build "$m" "${m}_$p" --precision "$p"; done
done
# A tensor and a constant (tests/backend/constant_operand_layers.yaml): built in fp16 (NHWC; the
# kernel is one template for every storage type), compiled in fp32: scalars as float literals,
# tensor operands packed as fp32 weights in both, the compiled-in check absent (no parameter);
# reshapes and flattens copied between stored orders in NHWC only (three), never for a view;
# two channel_conv1d layers, a sub and a div of two tensors.
build constant_operand_layers constant_operand_layers_fp16 --precision fp16
"$zoc" compile "$here/backend/constant_operand_layers.yaml" \
  -o "$scratch/constant_operand_layers_fp32_src" >/dev/null
for p in fp16 fp32; do
  src=$scratch/constant_operand_layers_${p}_src/constant_operand_layers
  [ "$(grep -c 'v.const_op(kCop_' "$src.cpp")" = 15 ] &&
    grep -q '.reverse = true, .scalar = 2.0f}' "$src.cpp" &&
    grep -q '"std", {3, 1, 1}, zoc::InitRule::kOnes, zoc::DeviceDType::kF32' "${src}_weights.h" &&
    grep -q 'v.pad(kPad_padded' "$src.cpp" && ! grep -q 'check_constant' "${src}_weights.h" &&
    ! grep -q 'v.relayout(kRelayout_as_row' "$src.cpp" &&
    [ "$(grep -c 'v.channel_conv(kCconv_' "$src.cpp")" = 2 ] &&
    [ "$(grep -c 'v.binary(kBin_' "$src.cpp")" = 2 ] &&
    [ "$(grep -c 'v.relayout(kRelayout_' "$src.cpp")" = "$([ $p = fp16 ] && echo 3 || echo 0)" ] ||
    { echo "constant_operand_layers $p: const_op layers not as expected"; exit 1; }
done
# The depthwise convolutions through cuDNN instead (--depthwise cudnn): the graph API (the
# default) puts their ReLU6 and SiLU in the epilogue; the legacy call fuses ReLU only, so
# there they run as in-place activation kernels after the convolution.
build depthwise_layers depthwise_layers_fp16_cudnn --precision fp16 --depthwise cudnn
src=$scratch/depthwise_layers_fp16_cudnn_src/depthwise_layers
grep -q 'zoc::GraphConvLayer dw2_' "$src.h" && ! grep -q 'v.activation(kAct_dw2' "$src.cpp" ||
  { echo "--depthwise cudnn: dw2 is not a graph-API convolution with its activation fused"; exit 1; }
build depthwise_layers depthwise_layers_fp16_cudnn_legacy --precision fp16 --depthwise cudnn \
  --conv-api legacy
[ -n "$sample" ] ||
  grep -q 'v.activation(kAct_dw2' "$scratch/depthwise_layers_fp16_cudnn_legacy_src/depthwise_layers.cpp" ||
  { echo "--depthwise cudnn --conv-api legacy: no in-place activation after dw2"; exit 1; }
# In fp16 the convolutions with ReLU6, SiLU, GELU, ... have the activation in the graph API's
# epilogue; hardswish and hardsigmoid stay in-place kernels.
src=$scratch/epilogue_layers_fp16_src/epilogue_layers.cpp
grep -q '.activation = zoc::act::Kind::kHardtanh' "$src" &&
  grep -q '.activation_params = {0, 6}' "$src" && grep -q 'zoc::act::Kind::kSilu' "$src" &&
  grep -q 'v.activation(kAct_c8' "$src" && ! grep -q 'v.activation(kAct_c2' "$src" ||
  { echo "epilogue_layers fp16: activations not where expected"; exit 1; }
! grep -q 'zoc::ConvLayer ' "$scratch/epilogue_layers_fp16_src/epilogue_layers.h" ||
  { echo "epilogue_layers fp16: a legacy convolution under the default --conv-api"; exit 1; }
# With --conv-api legacy (compiled only), the model mixes both: the graph API where the epilogue
# has an activation the legacy call lacks.
"$zoc" compile "$here/backend/epilogue_layers.yaml" --precision fp16 --conv-api legacy \
  -o "$scratch/epilogue_layers_fp16_legacy_src" >/dev/null
grep -q 'GraphConvLayer c2_' "$scratch/epilogue_layers_fp16_legacy_src/epilogue_layers.h" &&
  grep -q 'zoc::ConvLayer c7_' "$scratch/epilogue_layers_fp16_legacy_src/epilogue_layers.h" ||
  { echo "epilogue_layers fp16 --conv-api legacy: not one graph-API and one legacy convolution"
    exit 1; }
