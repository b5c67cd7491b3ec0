// The pickle scan's model of the unpickler's stack (pickle_scanner.h says what it keeps and which
// rules make it agree with LibTorch's and Python's unpicklers), and the checks on what LibTorch
// would build from it without checking: nesting depth, storages against their records, tensor
// views against their storages. All size arithmetic is overflow-checked.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/frontend/torchscript/pickle_scanner.h"
#include "compiler/support/checked_math.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::pickle {
namespace {

uint32_t depth_of(const Slot& s) { return s.node ? s.node->depth : 0; }

const Node* node_of(const Slot& s, Node::Kind kind) {
  return s.node && s.node->kind == kind ? s.node.get() : nullptr;
}

const std::string* known_string(const Slot& s) {
  const Node* n = node_of(s, Node::Kind::kString);
  return n && n->known ? &n->text : nullptr;
}

// The integers of a tuple the model kept whole, or nullopt.
std::optional<std::vector<int64_t>> ints_of(const Slot& s) {
  const Node* t = node_of(s, Node::Kind::kTuple);
  if (!t || !t->items_kept) return std::nullopt;
  std::vector<int64_t> out;
  for (const Slot& item : t->items) {
    if (item.kind != Slot::Kind::kInt) return std::nullopt;
    out.push_back(item.i);
  }
  return out;
}

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

int64_t storage_element_size(std::string_view dtype) {
  // clang-format off
  static constexpr std::pair<std::string_view, int64_t> kSizes[] = {
      {"Byte", 1},          {"Char", 1},           {"Short", 2},          {"Int", 4},
      {"Long", 8},          {"Half", 2},           {"Float", 4},          {"Double", 8},
      {"ComplexHalf", 4},   {"ComplexFloat", 8},   {"ComplexDouble", 16}, {"Bool", 1},
      {"QInt8", 1},         {"QUInt8", 1},         {"QInt32", 4},         {"BFloat16", 2},
      {"QUInt4x2", 1},      {"QUInt2x4", 1},       {"UInt16", 2},         {"UInt32", 4},
      {"UInt64", 8},        {"Float8_e5m2", 1},    {"Float8_e4m3fn", 1},  {"Float8_e5m2fnuz", 1},
      {"Float8_e4m3fnuz", 1}, {"Float8_e8m0fnu", 1}};
  // clang-format on
  for (const auto& [name, size] : kSizes) {
    if (name == dtype) return size;
  }
  return 0;
}

Status Scanner::room(uint64_t at) const {
  if (stack_.size() + marks_.size() + memo_.size() < kMaxLiveValues) return Status::success();
  return refuse(
      fmt::format("holds more than {} values at once (at byte {}), more than zoc "
                  "reads",
                  kMaxLiveValues, at));
}

Status Scanner::push(Slot s) {
  ZOC_TRY(room(pos_));
  stack_.push_back(std::move(s));
  return Status::success();
}

Expected<std::vector<Slot>> Scanner::pop(size_t n, const Opcode& op, uint64_t at) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() < floor + n) {
    return corrupt(fmt::format("has fewer values than its {} opcode at byte {} takes{}", op.name,
                               at, floor > 0 ? " after the last MARK" : ""));
  }
  std::vector<Slot> out(std::make_move_iterator(stack_.end() - static_cast<int64_t>(n)),
                        std::make_move_iterator(stack_.end()));
  stack_.resize(stack_.size() - n);
  return out;
}

Expected<std::vector<Slot>> Scanner::pop_mark(const Opcode& op, uint64_t at) {
  if (marks_.empty()) {
    return corrupt(fmt::format("has no MARK for its {} opcode at byte {}", op.name, at));
  }
  const size_t n = stack_.size() - marks_.back();
  ZOC_ASSIGN_OR_RETURN(std::vector<Slot> out, pop(n, op, at));
  marks_.pop_back();
  return out;
}

Expected<Slot*> Scanner::top(const Opcode& op, uint64_t at) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) {
    return corrupt(fmt::format("has no value for its {} opcode at byte {} to act on", op.name, at));
  }
  return &stack_.back();
}

Status Scanner::deeper(uint32_t depth, uint64_t at) const {
  if (depth <= kMaxDepth) return Status::success();
  return refuse(
      fmt::format("nests values more than {} deep (at byte {}); LibTorch frees nested values "
                  "recursively, and a million levels overflow its stack",
                  kMaxDepth, at));
}

void Scanner::summarize(Node& c, const Slot& item) {
  ++c.count;
  if (item.kind != Slot::Kind::kInt) {
    c.only_ints = false;
    return;
  }
  c.min_int = std::min(c.min_int, item.i);
  c.max_int = std::max(c.max_int, item.i);
}

Expected<Slot> Scanner::make(Node::Kind kind, std::vector<Slot> items, bool dict, uint64_t at) {
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->dict = dict;
  uint32_t deepest = 0;
  for (Slot& item : items) {
    deepest = std::max(deepest, depth_of(item));
    if (item.node) item.node->sealed = true;
    summarize(*node, item);
  }
  node->depth = deepest + 1;
  ZOC_TRY(deeper(node->depth, at));
  if (kind == Node::Kind::kTuple && items.size() <= kMaxKeptItems) {
    node->items_kept = true;
    node->items = std::move(items);
  }
  if (kind == Node::Kind::kTuple && string_table_format_) {
    if (text_table_ < 0) {
      text_table_ = static_cast<int64_t>(node->count);  // the first tuple is the string table
    } else {
      ZOC_TRY(check_source(*node, at));
    }
  }
  return Slot{Slot::Kind::kNode, 0, std::move(node)};
}

// LibTorch's SourceRangeDeserializer reads each source (text indices, file name index, starting
// line) by indexing the string table without a bound check.
Status Scanner::check_source(const Node& t, uint64_t at) const {
  if (!t.items_kept || t.items.size() != 3) return Status::success();
  const Node* text = t.items[0].node.get();
  if (!text || text->kind != Node::Kind::kContainer || !text->only_ints) return Status::success();
  const bool text_ok = text->count == 0 || (text->min_int >= 0 && text->max_int < text_table_);
  const bool name_ok =
      t.items[1].kind == Slot::Kind::kInt && t.items[1].i >= 0 && t.items[1].i < text_table_;
  if (text_ok && name_ok) return Status::success();
  return corrupt(
      fmt::format("has a source (at byte {}) that refers to entries past its string "
                  "table of {}, which LibTorch would read past",
                  at, text_table_));
}

// A container is filled before it is placed into another and never after (pickle_scanner.h):
// then its depth is final once placed, and it cannot come to hold itself.
Status Scanner::add(Slot& into, std::vector<Slot> items, const Opcode& op, uint64_t at) {
  Node* c = into.node.get();
  if (!c || c->kind != Node::Kind::kContainer) {
    return corrupt(
        fmt::format("adds to something that is not a list, dict, set or object ({} "
                    "at byte {})",
                    op.name, at));
  }
  if (c->sealed) {
    return refuse(
        fmt::format("adds to a container already placed inside another ({} at byte "
                    "{})",
                    op.name, at));
  }
  for (Slot& item : items) {
    if (item.node.get() == c) {
      return refuse(fmt::format("puts a container inside itself ({} at byte {})", op.name, at));
    }
    c->depth = std::max(c->depth, depth_of(item) + 1);
    if (item.node) item.node->sealed = true;
    summarize(*c, item);
  }
  return deeper(c->depth, at);
}

// A persistent id as torch.jit.save writes one: ('storage', torch.<dtype>Storage, key, location,
// numel). LibTorch reads the record <archive>/<key> (numel > 0) and trusts numel for the
// storage's size, whatever the record holds.
Expected<Slot> Scanner::storage(const Slot& id, uint64_t at) {
  if (!record_sizes_) return Slot{};  // a pickle whose tensors LibTorch does not build
  const Node* t = node_of(id, Node::Kind::kTuple);
  const auto odd = [&](const std::string& why) {
    return refuse(
        fmt::format("has a persistent id (BINPERSID at byte {}) that is not a tensor "
                    "storage as torch.jit.save writes one: {}",
                    at, why));
  };
  if (!t || !t->items_kept || t->items.size() < 5) {
    return odd("('storage', its type, key, device, size) expected");
  }
  const std::string* tag = known_string(t->items[0]);
  const Node* type = node_of(t->items[1], Node::Kind::kGlobal);
  const std::string* key = known_string(t->items[2]);
  if (!tag || *tag != "storage" || !type || !key || t->items[4].kind != Slot::Kind::kInt) {
    return odd("('storage', its type, key, device, size) expected");
  }
  constexpr std::string_view kPrefix = "torch.", kSuffix = "Storage";
  const std::string_view type_name = type->text;
  Storage s;
  if (type_name.size() > kPrefix.size() + kSuffix.size() &&
      type_name.substr(0, kPrefix.size()) == kPrefix &&
      type_name.substr(type_name.size() - kSuffix.size()) == kSuffix) {
    s.dtype = std::string(
        type_name.substr(kPrefix.size(), type_name.size() - kPrefix.size() - kSuffix.size()));
  }
  s.element_size = storage_element_size(s.dtype);
  s.numel = t->items[4].i;
  if (s.element_size == 0) return odd(fmt::format("'{}' is no storage type", type->text));
  // data.pkl's storages are in data/, constants.pkl's in constants/.
  const size_t dot = record_.rfind('.');
  s.record = record_.substr(0, dot) + "/" + *key;
  const auto bytes = checked_mul(s.numel, s.element_size);
  if (s.numel < 0 || !bytes) {
    return refuse(fmt::format("gives storage '{}' {} elements (BINPERSID at byte {})",
                              shown_text(s.record), s.numel, at));
  }
  if (s.numel > 0) {
    const auto it = record_sizes_->find(lower_case(s.record));
    if (it == record_sizes_->end()) {
      return refuse(
          fmt::format("names storage '{}' (BINPERSID at byte {}), which is no record "
                      "of the archive",
                      shown_text(s.record), at));
    }
    if (it->second < static_cast<uint64_t>(*bytes)) {
      return refuse(fmt::format(
          "gives storage '{}' {} {} elements ({} bytes; BINPERSID at byte {}), but its record "
          "holds {} bytes, and LibTorch would read past them",
          shown_text(s.record), s.numel, s.dtype, *bytes, at, it->second));
    }
  }
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kStorage;
  node->storage = std::move(s);
  return Slot{Slot::Kind::kNode, 0, std::move(node)};
}

// _rebuild_tensor_v2(storage, offset, sizes, strides, ...) and _rebuild_qtensor alike: LibTorch
// sets the view on the storage as given, so every element the view can reach must be inside it.
Expected<Slot> Scanner::tensor(const Slot& args, uint64_t at) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kTensor;
  node->depth = 1;
  Slot result{Slot::Kind::kNode, 0, std::move(node)};
  if (!record_sizes_) return result;  // a pickle whose tensors LibTorch does not build
  ++tensors_;
  const std::string name = tensor_name();
  const Node* t = node_of(args, Node::Kind::kTuple);
  const Node* st = t && t->items_kept && t->items.size() >= 4
                       ? node_of(t->items[0], Node::Kind::kStorage)
                       : nullptr;
  const auto sizes = st ? ints_of(t->items[2]) : std::nullopt;
  const auto strides = st ? ints_of(t->items[3]) : std::nullopt;
  if (!st || t->items[1].kind != Slot::Kind::kInt || !sizes || !strides ||
      sizes->size() != strides->size()) {
    return refuse(
        fmt::format("builds tensor {} (REDUCE at byte {}) from arguments other than a "
                    "storage, an offset and as many sizes as strides",
                    name, at));
  }
  const Storage& s = st->storage;
  const int64_t offset = t->items[1].i;
  const std::string view = fmt::format("sizes [{}], strides [{}], storage offset {}",
                                       fmt::join(*sizes, ", "), fmt::join(*strides, ", "), offset);
  // The last element the view reaches: offset + sum((size - 1) * stride), if it has any.
  std::optional<int64_t> last = offset;
  bool empty = false;
  for (size_t i = 0; i < sizes->size() && last; ++i) {
    if ((*sizes)[i] < 0 || (*strides)[i] < 0) last = std::nullopt;
    empty = empty || (*sizes)[i] == 0;
    const auto step =
        last ? checked_mul((*sizes)[i] > 0 ? (*sizes)[i] - 1 : 0, (*strides)[i]) : std::nullopt;
    last = step ? checked_add(*last, *step) : std::nullopt;
  }
  if (offset < 0 || !last) {
    return refuse(
        fmt::format("builds tensor {} ({}; REDUCE at byte {}) with a negative size, "
                    "stride or offset, or one whose reach overflows",
                    name, view, at));
  }
  if (!empty && *last >= s.numel) {
    return refuse(fmt::format(
        "builds tensor {} ({}; REDUCE at byte {}) that reaches element {} of storage '{}', "
        "which holds {} {} elements: LibTorch would read past its storage",
        name, view, at, *last, shown_text(s.record), s.numel, s.dtype));
  }
  return result;
}

// The dict keys that lead to the value being built: in each dict still being filled (a MARK
// right above it), the last string at an even distance from the MARK is the key whose value is
// in progress ('conv1', its module object, its state dict, then 'weight' in that one's MARK).
std::string Scanner::tensor_name() const {
  std::string path;
  for (size_t k = 0; k < marks_.size(); ++k) {
    const size_t begin = marks_[k];
    const size_t end = k + 1 < marks_.size() ? marks_[k + 1] : stack_.size();
    if (begin == 0 || begin > end) continue;
    const Node* below = stack_[begin - 1].node.get();
    if (!below || below->kind != Node::Kind::kContainer || !below->dict) continue;
    const std::string* key = nullptr;
    for (size_t i = begin; i < end; i += 2) {
      if (const std::string* s = known_string(stack_[i])) key = s;
    }
    if (key) path += (path.empty() ? "" : ".") + *key;
  }
  if (path.empty()) return fmt::format("#{}", tensors_);
  return "'" + shown_text(path) + "'";
}

}  // namespace zoc::torchscript::pickle
