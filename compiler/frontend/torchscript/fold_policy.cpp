// Which operations the TorchScript frontend evaluates while it compiles a model, and how much they
// may compute (internal.h, FoldVerdict).
//
// Why a list. The symbolic interpreter folds nodes whose inputs are all constants by running
// LibTorch's own kernels on them (translate_values.cpp). It once ran any op: a scripted forward
// could read /etc/passwd with aten::from_file into its exception message, write files through a
// shared mapping, or double a string until memory ran out, all while `zoc ir` compiled it. A model
// file is data (DESIGN.md), so only ops known to be pure run: the lists below, checked before the
// op runs; anything else on constants is refused with its location. Every value an op takes or
// gives is measured (strings and tensor data in bytes, 8 bytes per number and per item, nesting
// at most 100 deep, as printing or comparing it would walk it), each is bounded, and so is their
// sum over the whole translation, which bounds time as well as memory.
//
// Where the list comes from. What the corpus of third-party models (68 timm and torchvision
// models, scripted and traced, tools/corpus) and the repository's TorchScript tests fold:
// comparisons of ints, floats, strings and enums, aten::format, len, __getitem__, __contains__,
// __is__/__isnot__, __not__, floordiv and mul on ints, Bool of a float, unchecked casts, the empty
// dict of the segmentation heads; and traced models' shape arithmetic on 0-dim tensors:
// NumToTensor, Int, floor_divide, add, sub, mul, div, clamp and ceil. The other members of those
// families (comparisons, arithmetic, casts, min and max, common string methods, math on scalars)
// are allowed too. Nothing that touches files, devices, randomness, threads or the environment,
// and no op whose result can outgrow its inputs without a bound checked first.
//
// LibTorch folds constants itself while it compiles a model's code (its constant propagation of
// immutable values, as torch.jit.load defines each method), with no bound either: forty lines of
// `s = s + s` in a code record took it to terabytes. guard_libtorch_string_ops replaces, once per
// process, each string operator whose result can outgrow its inputs by the same operator behind
// the size check zoc's own folding makes; LibTorch's pass catches the refusal and leaves the
// expression to zoc, which then reports it.
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/internal.h"

namespace zoc::torchscript::detail {
namespace {

using namespace std::string_view_literals;

// clang-format off
// Numbers, strings and containers of them.
constexpr std::string_view kValueOps[] = {
    "aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::__not__",
    "aten::__and__", "aten::__or__", "aten::__xor__", "aten::add", "aten::sub", "aten::mul",
    "aten::div", "aten::floordiv", "aten::remainder", "aten::neg", "aten::pow", "aten::abs",
    "prim::abs", "prim::min", "prim::max", "aten::floor", "aten::ceil", "aten::sqrt", "aten::log",
    "aten::exp", "aten::__round_to_zero_floordiv", "aten::__range_length", "aten::__derive_index",
    "aten::Int", "aten::Float", "aten::Bool", "aten::ScalarImplicit", "aten::IntImplicit",
    "aten::FloatImplicit", "aten::str", "aten::format", "aten::join", "aten::startswith",
    "aten::endswith", "aten::lower", "aten::upper", "aten::strip", "aten::lstrip", "aten::rstrip",
    "aten::slice"};
// Ops that move values around and read no tensor's data: allowed whatever the values hold.
constexpr std::string_view kPlumbingOps[] = {
    "aten::len",  "aten::__getitem__", "aten::__contains__", "aten::__is__",
    "aten::__isnot__", "aten::list", "aten::dict", "aten::append", "aten::keys", "aten::values",
    "aten::get", "prim::unchecked_cast"};
// Ops that read a tensor's sizes, type or device, not its data.
constexpr std::string_view kMetadataOps[] = {"aten::size",  "aten::dim",    "aten::numel",
                                             "prim::dtype", "prim::device", "prim::layout",
                                             "prim::is_cuda"};
// Arithmetic on small tensors: the 0-dim tensors of traced shape arithmetic.
constexpr std::string_view kSmallTensorOps[] = {
    "prim::NumToTensor", "aten::Int",  "aten::Float", "aten::Bool",      "aten::ScalarImplicit",
    "aten::floor_divide", "aten::add", "aten::sub",   "aten::mul",       "aten::div",
    "aten::neg",          "aten::remainder", "aten::clamp", "aten::ceil", "aten::floor",
    "aten::eq",           "aten::ne",  "aten::lt",    "aten::le",        "aten::gt",
    "aten::ge"};
// clang-format on

template <size_t N>
bool listed(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

void measure(const c10::IValue& v, size_t depth, uint64_t limit, bool tensor_data, FoldSize& m) {
  if (m.bytes > limit || m.too_deep) return;
  if (depth > kMaxFoldedDepth) {
    m.too_deep = true;
    return;
  }
  m.bytes += 8;
  if (v.isString()) {
    m.bytes += v.toStringRef().size();
  } else if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && tensor_data) m.bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
  } else if (v.isList()) {
    for (const c10::IValue& item : v.toListRef()) measure(item, depth + 1, limit, tensor_data, m);
  } else if (v.isTuple()) {
    for (const c10::IValue& item : v.toTupleRef().elements())
      measure(item, depth + 1, limit, tensor_data, m);
  } else if (v.isGenericDict()) {
    for (const auto& entry : v.toGenericDict()) {
      measure(entry.key(), depth + 1, limit, tensor_data, m);
      measure(entry.value(), depth + 1, limit, tensor_data, m);
    }
  }
}

uint64_t size_of(const c10::IValue& v) { return measure_value(v, false).bytes; }

const char* kNotPure =
    "zoc evaluates only the number, string, list and shape operations it knows to be pure on a "
    "model's constants (a model file must not make zoc read or write files)";

}  // namespace

FoldSize measure_value(const c10::IValue& v, bool tensor_data) {
  FoldSize m;
  measure(v, 0, kMaxFoldedValueBytes, tensor_data, m);
  return m;
}

bool holds_tensor(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::TensorType) return true;
  for (const c10::TypePtr& c : t->containedTypes()) {
    if (holds_tensor(c)) return true;
  }
  return false;
}

// An upper bound of the size of what a string operator gives, for those whose result can outgrow
// their inputs; nullopt for the others. `args` are its inputs, in order.
std::optional<uint64_t> string_result_bound(const c10::FunctionSchema& schema,
                                            c10::ArrayRef<c10::IValue> args) {
  const std::string& name = schema.name();
  const auto str = [&](size_t i) {
    return i < args.size() && args[i].isString() ? args[i].toStringRef().size() : size_t{0};
  };
  const auto num = [&](size_t i) {
    return i < args.size() && args[i].isInt()
               ? static_cast<uint64_t>(std::max<int64_t>(args[i].toInt(), 0))
               : uint64_t{0};
  };
  if (name == "aten::add" && schema.overload_name() == "str") return str(0) + str(1);
  if (name == "aten::ljust" || name == "aten::rjust" || name == "aten::center" ||
      name == "aten::zfill") {
    return std::max<uint64_t>(str(0), num(1)) * std::max<uint64_t>(1, str(2));
  }
  if (name == "aten::expandtabs") return str(0) * std::max<uint64_t>(1, num(1));
  if (name == "aten::replace") {
    return str(0) + (str(0) / std::max<size_t>(1, str(1)) + 1) * str(2);
  }
  if (name == "aten::str") return args.empty() ? 0 : 3 * size_of(args[0]);
  if (name == "aten::join" && args.size() == 2 && args[1].isList()) {
    return str(0) * args[1].toListRef().size() + size_of(args[1]);
  }
  if (name == "aten::mul" && args.size() == 2 && (args[0].isList() || args[1].isList())) {
    const bool list_first = args[0].isList();
    return size_of(args[list_first ? 0 : 1]) * num(list_first ? 1 : 0);
  }
  return std::nullopt;
}

FoldVerdict check_fold(jit::Node* n, const std::vector<c10::IValue>& args) {
  const std::string name = n->kind().toQualString();
  if (n->maybeSchema()) {
    if (auto bound = string_result_bound(n->schema(), args);
        bound && *bound > kMaxFoldedValueBytes) {
      return {FoldVerdict::kTooLarge,
              fmt::format("{} on constants would give a value of about {} bytes", name, *bound)};
    }
  }
  if (listed(kPlumbingOps, name)) return {};
  bool tensors = false;
  for (const jit::Value* v : n->inputs()) tensors = tensors || holds_tensor(v->type());
  for (const jit::Value* v : n->outputs()) tensors = tensors || holds_tensor(v->type());
  for (const c10::IValue& a : args) tensors = tensors || a.isTensor() || a.isTensorList();
  if (!tensors) {
    return listed(kValueOps, name) ? FoldVerdict{} : FoldVerdict{FoldVerdict::kNotPure, kNotPure};
  }
  if (listed(kMetadataOps, name)) return {};
  if (!listed(kSmallTensorOps, name)) return {FoldVerdict::kNotPure, kNotPure};
  for (const c10::IValue& a : args) {
    if (!a.isTensor()) continue;
    const at::Tensor& t = a.toTensor();
    if (!t.defined() || t.layout() != at::kStrided || t.is_quantized() || !t.device().is_cpu() ||
        t.numel() > kMaxFoldedTensorElements) {
      return {FoldVerdict::kNotPure,
              fmt::format("it takes a constant tensor of {} elements, and zoc evaluates tensor "
                          "operations on dense constants of at most {}",
                          t.defined() ? t.numel() : 0, kMaxFoldedTensorElements)};
    }
  }
  return {FoldVerdict::kAllowed, "", /*tensor_data=*/true};
}

void guard_libtorch_string_ops() {
  static const bool done = [] {
    constexpr std::pair<const char*, const char*> kGuarded[] = {
        {"aten::add", "str"},  {"aten::ljust", ""}, {"aten::rjust", ""},
        {"aten::center", ""},  {"aten::zfill", ""}, {"aten::expandtabs", ""},
        {"aten::replace", ""}, {"aten::str", ""},   {"aten::join", ""}};
    for (const auto& [name, overload] : kGuarded) {
      const std::shared_ptr<jit::Operator> original =
          jit::findOperatorFor(c10::OperatorName(name, overload));
      if (!original || original->isC10Op() || !original->hasOperation()) continue;
      const c10::FunctionSchema schema = original->schema();
      jit::Operation inner = original->getOperation();
      const c10::AliasAnalysisKind alias = original->aliasAnalysisKind();
      jit::deregisterOperator(schema);
      jit::registerOperator(jit::Operator(
          schema.name(), schema.overload_name(), schema.arguments(), schema.returns(),
          [inner, schema](jit::Stack& stack) mutable {
            const size_t n = schema.arguments().size();
            const auto bound = string_result_bound(
                schema, c10::ArrayRef<c10::IValue>(stack).slice(stack.size() - n, n));
            TORCH_CHECK(!bound || *bound <= kMaxFoldedValueBytes, schema.name(),
                        " would give a value of about ", bound.value_or(0),
                        " bytes, more than zoc lets LibTorch compute while compiling");
            inner(stack);
          },
          alias));
    }
    return true;
  }();
  (void)done;
}

}  // namespace zoc::torchscript::detail
