// The op table expanded into arrays (see ops.def).
#include "compiler/ir/ops.h"

#include <array>
#include <utility>
#include <vector>

namespace zoc::ir {
namespace {

struct AttrRow {
  OpKind op;
  AttrSpec spec;
};

constexpr AttrRow kAttrRows[] = {
#define ZOC_ATTR(op, name, kind, required, dflt, min, max, summary)                      \
  {OpKind::op,                                                                           \
   {name, AttrKind::kind, required, static_cast<double>(dflt), static_cast<double>(min), \
    static_cast<double>(max), summary}},
#define ZOC_PASS_ATTR(op, name, kind, min, max, summary)                                     \
  {OpKind::op,                                                                               \
   {name, AttrKind::kind, false, kUnset, static_cast<double>(min), static_cast<double>(max), \
    summary, false}},
#include "compiler/ir/ops.def"
};

// Ops that take another op's attribute schema (ZOC_SAME_ATTRS; an activation's backward op takes
// the activation's, ZOC_ACTIVATION).
constexpr std::pair<OpKind, OpKind> kSameAttrs[] = {
#define ZOC_SAME_ATTRS(op, from) {OpKind::op, OpKind::from},
#define ZOC_ACTIVATION(op, grad, math) {OpKind::grad, OpKind::op},
#define ZOC_REF_ACTIVATION(op, grad, math) {OpKind::grad, OpKind::op},
#include "compiler/ir/ops.def"
};

struct Tables {
  std::vector<std::vector<AttrSpec>> attrs;
  std::vector<OpInfo> ops;

  Tables() {
    struct Row {
      OpKind kind;
      std::string_view name;
      int min_in, max_in;
      bool user;
      std::string_view summary;
    };
    const Row rows[] = {
#define ZOC_OP(id, spelling, min_in, max_in, user, summary) \
  {OpKind::id, spelling, min_in, max_in, user, summary},
#include "compiler/ir/ops.def"
    };
    attrs.resize(std::size(rows));
    for (const AttrRow& a : kAttrRows) attrs[static_cast<size_t>(a.op)].push_back(a.spec);
    for (const auto& [op, from] : kSameAttrs) {
      attrs[static_cast<size_t>(op)] = attrs[static_cast<size_t>(from)];
    }
    for (const Row& r : rows) {
      ops.push_back({r.kind, r.name, r.min_in, r.max_in, r.user, r.summary,
                     std::span<const AttrSpec>(attrs[static_cast<size_t>(r.kind)])});
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const OpInfo& op_info(OpKind kind) { return tables().ops[static_cast<size_t>(kind)]; }

std::span<const OpInfo> all_ops() { return tables().ops; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (const OpInfo& info : tables().ops) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

const AttrSpec* find_attr(OpKind kind, std::string_view name) {
  for (const AttrSpec& spec : op_info(kind).attrs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int:
      return "an integer";
    case AttrKind::Pair:
      return "an integer or a pair [h, w]";
    case AttrKind::Bool:
      return "a boolean";
    case AttrKind::Float:
      return "a number";
    case AttrKind::Init:
      return "an initialization scheme";
  }
  return "?";
}

namespace {
constexpr std::pair<InitScheme, std::string_view> kInitNames[] = {
    {InitScheme::kPytorchDefault, "pytorch"},
    {InitScheme::kKaimingNormalFanOut, "kaiming_normal_fan_out"},
    {InitScheme::kOnes, "ones"},
    {InitScheme::kZeros, "zeros"},
};
}  // namespace

std::string_view init_scheme_name(InitScheme scheme) {
  for (const auto& [s, name] : kInitNames) {
    if (s == scheme) return name;
  }
  return "?";
}

std::optional<InitScheme> init_scheme_from_name(std::string_view name) {
  for (const auto& [s, n] : kInitNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

}  // namespace zoc::ir
