// The trainer emitter's per-layer part (see train_emitter.h): each op's training-mode forward
// call and its backward call, which adds into its input's gradient (parameter gradients are
// overwritten), through zoc/train/layers.h, cuBLAS and zoc/train/kernels.cuh.
#include "compiler/backend/cudnn/train_emitter.h"

namespace zoc::cudnn::train {

bool TrainerEmitter::emit_node(const ir::Node& n) {
  const ir::Attrs& a = n.attrs;
  const std::string i = id(n);
  auto dims = [&](ir::ValueId v) { return g_.type(v).dims; };
  switch (n.op) {
    case ir::OpKind::Input:
      comment(forward_, n, "the caller's fp32 NCHW batch, copied into the arena");
      forward_.line("ZOC_CUDA(cudaMemcpyAsync({}, input, size_t(n) * {} * sizeof(float), "
                    "cudaMemcpyDeviceToDevice, stream), \"input\");",
                    A(n.output), g_.type(n.output).sample_numel());
      return true;
    case ir::OpKind::Conv2d: {
      const auto in = dims(n.inputs[0]), out = dims(n.output);
      const ir::Pair k = a.pair("kernel"), s = a.pair("stride"), p = a.pair("padding"),
                     d = a.pair("dilation");
      members_.line("zoc::train::Conv {}_;", i);
      create_.line("ZOC_TRY(t->{}_.create({{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}, {}));",
                   i, in[0], in[1], in[2], out[0], k.h, k.w, p.h, p.w, s.h, s.w, d.h, d.w,
                   a.i("groups"), out[1], out[2], lit(n));
      describe_.line("ZOC_TRY({}_.describe(cudnn_, n, workspace_limit, benchmark_, deterministic_, {}));", i,
                     lit(n));
      describe_.line("need = std::max(need, {}_.workspace);", i);
      destroy_.line("{}_.destroy();", i);
      const bool bias = a.b("bias");
      comment(forward_, n, fmt::format("conv {}x{}/{}, {}->{}{}", k.h, k.w, s.h, in[0], out[0],
                                       bias ? " + bias" : ""));
      forward_.line("ZOC_TRY({}_.forward(cudnn_, {}, {}, {}, {}, workspace_, workspace_bytes_, {}));",
                    i, A(n.inputs[0]), P(n.name + ".weight"), bias ? P(n.name + ".bias") : "nullptr",
                    A(n.output), lit(n));
      return true;
    }
    case ir::OpKind::BatchNorm2d: {
      const auto in = dims(n.inputs[0]);
      members_.line("zoc::train::BatchNorm {}_;", i);
      create_.line("ZOC_TRY(t->{}_.create({}, {}, {}, {:.9g}, {:.9g}, {}));", i, in[0], in[1], in[2],
                   a.f("eps"), a.f("momentum"), lit(n));
      describe_.line("ZOC_TRY({}_.describe(n, {}));", i, lit(n));
      destroy_.line("{}_.destroy();", i);
      comment(forward_, n, "batch norm with the batch's statistics; running averages updated");
      forward_.line("ZOC_TRY({}_.forward(cudnn_, {}, {}, {}, {}, {}, {}, s + {}, s + {}, {}));", i,
                    A(n.inputs[0]), A(n.output), P(n.name + ".weight"), P(n.name + ".bias"),
                    P(n.name + ".running_mean"), P(n.name + ".running_var"), bn_save_.at(&n),
                    bn_save_.at(&n) + in[0], lit(n));
      eval_only_ = true;
      comment(eval_node_, n, "batch norm with the running statistics");
      eval_node_.line("ZOC_TRY({}_.forward_inference(cudnn_, {}, {}, {}, {}, {}, {}, {}));", i,
                      A(n.inputs[0]), A(n.output), P(n.name + ".weight"), P(n.name + ".bias"),
                      P(n.name + ".running_mean"), P(n.name + ".running_var"), lit(n));
      return true;
    }
    case ir::OpKind::Relu:
    case ir::OpKind::Tanh:
    case ir::OpKind::Sigmoid: {
      const char* mode = n.op == ir::OpKind::Relu   ? "CUDNN_ACTIVATION_RELU"
                         : n.op == ir::OpKind::Tanh ? "CUDNN_ACTIVATION_TANH"
                                                    : "CUDNN_ACTIVATION_SIGMOID";
      members_.line("zoc::train::Activation {}_;", i);
      create_.line("ZOC_TRY(t->{}_.create({}, {}, {}));", i, mode, g_.type(n.output).sample_numel(),
                   lit(n));
      describe_.line("ZOC_TRY({}_.describe(n, {}));", i, lit(n));
      destroy_.line("{}_.destroy();", i);
      comment(forward_, n, std::string(ir::op_info(n.op).name));
      forward_.line("ZOC_TRY({}_.forward(cudnn_, {}, {}, {}));", i, A(n.inputs[0]), A(n.output),
                    lit(n));
      return true;
    }
    case ir::OpKind::MaxPool2d:
    case ir::OpKind::AvgPool2d:
    case ir::OpKind::GlobalAvgPool: {
      const auto in = dims(n.inputs[0]), out = dims(n.output);
      std::string mode = "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING";
      ir::Pair k{in[1], in[2]}, s{1, 1}, p{0, 0};
      if (n.op != ir::OpKind::GlobalAvgPool) {
        k = a.pair("kernel");
        s = a.pair("stride");
        p = a.pair("padding");
        if (a.b("ceil_mode")) return unsupported(n, "ceil_mode");
      }
      if (n.op == ir::OpKind::MaxPool2d) {
        if (a.pair("dilation").h != 1 || a.pair("dilation").w != 1) return unsupported(n, "dilation");
        mode = "CUDNN_POOLING_MAX_DETERMINISTIC";
      } else if (n.op == ir::OpKind::AvgPool2d && !a.b("count_include_pad")) {
        mode = "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING";
      }
      members_.line("zoc::train::Pool {}_;", i);
      create_.line("ZOC_TRY(t->{}_.create({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}));", i,
                   mode, k.h, k.w, p.h, p.w, s.h, s.w, in[0], in[1], in[2], out[1], out[2], lit(n));
      describe_.line("ZOC_TRY({}_.describe(n, {}));", i, lit(n));
      destroy_.line("{}_.destroy();", i);
      comment(forward_, n, fmt::format("{} {}x{}/{}", ir::op_info(n.op).name, k.h, k.w, s.h));
      forward_.line("ZOC_TRY({}_.forward(cudnn_, {}, {}, {}));", i, A(n.inputs[0]), A(n.output),
                    lit(n));
      return true;
    }
    case ir::OpKind::Linear: {
      const int64_t in = g_.type(n.inputs[0]).sample_numel(), out = dims(n.output)[0];
      comment(forward_, n, fmt::format("linear {} -> {}: y = x W^T{}", in, out,
                                       a.b("bias") ? " + b" : ""));
      // Row-major y[n, out] = x[n, in] W^T is column-major y^T = W^T^T x^T (as in inference).
      forward_.line("ZOC_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, {out}, n, {in}, "
                    "&kOne, {w}, {in}, {x}, {in}, &kZero, {y}, {out}), {l});",
                    fmt::arg("out", out), fmt::arg("in", in), fmt::arg("w", P(n.name + ".weight")),
                    fmt::arg("x", A(n.inputs[0])), fmt::arg("y", A(n.output)), fmt::arg("l", lit(n)));
      if (a.b("bias")) {
        forward_.line("ZOC_CUDA(train_kernels::add_bias_rows({}, {}, n, {}, stream), {});",
                      A(n.output), P(n.name + ".bias"), out, lit(n));
      }
      return true;
    }
    case ir::OpKind::Add:
      comment(forward_, n, "elementwise add");
      forward_.line("ZOC_CUDA(train_kernels::add({}, {}, {}, int64_t(n) * {}, stream), {});",
                    A(n.inputs[0]), A(n.inputs[1]), A(n.output), g_.type(n.output).sample_numel(),
                    lit(n));
      return true;
    case ir::OpKind::Flatten:
      comment(forward_, n, "a view of its input (NCHW order is the flattened order)");
      return true;
    case ir::OpKind::Dropout: {
      const int64_t count = g_.type(n.output).sample_numel();
      comment(forward_, n, fmt::format("p = {:.9g}, a mask drawn from (seed, step, layer, element) "
                                       "by zoc/train/kernels.cuh", a.f("p")));
      has_dropout_ = true;
      forward_.line("ZOC_CUDA(train_kernels::dropout({}, {}, int64_t(n) * {}, dropout_ ? {:.9g}f : "
                    "0.0f, dropout_seed_, draws_, {}, false, stream), {});",
                    A(n.inputs[0]), A(n.output), count, a.f("p"), node_index(n), lit(n));
      eval_only_ = true;
      comment(eval_node_, n, "dropout is the identity in evaluation");
      eval_node_.line("ZOC_CUDA(train_kernels::dropout({}, {}, int64_t(n) * {}, 0.0f, 0, nullptr, "
                      "0, false, stream), {});",
                      A(n.inputs[0]), A(n.output), count, lit(n));
      return true;
    }
    case ir::OpKind::Softmax:
      if (n.output == g_.outputs[0]) {
        comment(forward_, n, "not computed: the loss takes the logits before it");
        return true;
      }
      return unsupported(n, "a softmax inside the model");
    case ir::OpKind::Concat: return unsupported(n, "concat yet");
    case ir::OpKind::FusedConv2d:
      return unsupported(n, "fused layers: compile the model as written (--train skips the "
                            "inference passes)");
    default: break;
  }
  return unsupported(n, "this op");
}

void TrainerEmitter::emit_backward(const ir::Node& n) {
  if (n.op == ir::OpKind::Input || !needs_grad_[static_cast<size_t>(n.output)]) return;
  if (n.op == ir::OpKind::Softmax && n.output == g_.outputs[0]) return;
  const std::string i = id(n);
  auto dx = [&](size_t k) {  // the input's gradient, or nullptr where none is needed
    return needs_grad_[static_cast<size_t>(n.inputs[k])] ? D(n.inputs[k]) : std::string("nullptr");
  };
  const ir::Attrs& a = n.attrs;
  switch (n.op) {
    case ir::OpKind::Conv2d:
      comment(backward_, n, "dx += conv^T(dy); dW, db");
      backward_.line("ZOC_TRY({}_.backward(cudnn_, {}, {}, {}, {}, {}, {}, workspace_, "
                     "workspace_bytes_, {}));",
                     i, A(n.inputs[0]), P(n.name + ".weight"), D(n.output), dx(0),
                     G(n.name + ".weight"), a.b("bias") ? G(n.name + ".bias") : "nullptr", lit(n));
      return;
    case ir::OpKind::BatchNorm2d: {
      const int64_t c = g_.type(n.output).dims[0];
      comment(backward_, n, "dx += BN'(dy); dgamma, dbeta");
      backward_.line("ZOC_TRY({}_.backward(cudnn_, {}, {}, {}, {}, {}, {}, s + {}, s + {}, {}));", i,
                     A(n.inputs[0]), D(n.output), D(n.inputs[0]), P(n.name + ".weight"),
                     G(n.name + ".weight"), G(n.name + ".bias"), bn_save_.at(&n),
                     bn_save_.at(&n) + c, lit(n));
      return;
    }
    case ir::OpKind::Relu:
    case ir::OpKind::Tanh:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::MaxPool2d:
    case ir::OpKind::AvgPool2d:
    case ir::OpKind::GlobalAvgPool:
      comment(backward_, n, fmt::format("dx += {}'(dy)", ir::op_info(n.op).name));
      backward_.line("ZOC_TRY({}_.backward(cudnn_, {}, {}, {}, {}, {}));", i, A(n.inputs[0]),
                     A(n.output), D(n.output), D(n.inputs[0]), lit(n));
      return;
    case ir::OpKind::Linear: {
      const int64_t in = g_.type(n.inputs[0]).sample_numel(), out = g_.type(n.output).dims[0];
      comment(backward_, n, "dx += dy W; dW = dy^T x; db = column sums of dy");
      if (needs_grad_[static_cast<size_t>(n.inputs[0])]) {
        backward_.line("ZOC_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, {in}, n, {out}, "
                       "&kOne, {w}, {in}, {dy}, {out}, &kOne, {dx}, {in}), {l});",
                       fmt::arg("in", in), fmt::arg("out", out), fmt::arg("w", P(n.name + ".weight")),
                       fmt::arg("dy", D(n.output)), fmt::arg("dx", D(n.inputs[0])),
                       fmt::arg("l", lit(n)));
      }
      backward_.line("ZOC_CUBLAS(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, {in}, {out}, n, "
                     "&kOne, {x}, {in}, {dy}, {out}, &kZero, {dw}, {in}), {l});",
                     fmt::arg("in", in), fmt::arg("out", out), fmt::arg("x", A(n.inputs[0])),
                     fmt::arg("dy", D(n.output)), fmt::arg("dw", G(n.name + ".weight")),
                     fmt::arg("l", lit(n)));
      if (a.b("bias")) {
        backward_.line("ZOC_CUDA(train_kernels::sum_rows({}, {}, n, {}, stream), {});",
                       D(n.output), G(n.name + ".bias"), out, lit(n));
      }
      return;
    }
    case ir::OpKind::Add: {
      const int64_t count = g_.type(n.output).sample_numel();
      comment(backward_, n, "both inputs receive dy");
      for (size_t k = 0; k < 2; ++k) {
        if (!needs_grad_[static_cast<size_t>(n.inputs[k])]) continue;
        backward_.line("ZOC_CUDA(train_kernels::accumulate({}, {}, int64_t(n) * {}, stream), "
                       "{});",
                       D(n.inputs[k]), D(n.output), count, lit(n));
      }
      return;
    }
    case ir::OpKind::Dropout:
      if (!needs_grad_[static_cast<size_t>(n.inputs[0])]) return;
      comment(backward_, n, "dx += dy * the step's mask");
      backward_.line("ZOC_CUDA(train_kernels::dropout({}, {}, int64_t(n) * {}, dropout_ ? {:.9g}f : "
                     "0.0f, dropout_seed_, draws_, {}, true, stream), {});",
                     D(n.output), D(n.inputs[0]), g_.type(n.output).sample_numel(), a.f("p"),
                     node_index(n), lit(n));
      return;
    default:
      return;  // Flatten: it shares its input's gradient buffer
  }
}

}  // namespace zoc::cudnn::train
