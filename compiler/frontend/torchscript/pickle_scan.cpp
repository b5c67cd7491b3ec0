// The opcode walk and allow-list of pickle_scan.h, and the opcodes' effects on the model of the
// unpickler's stack (pickle_scanner.h; pickle_values.cpp keeps the stack). Globals are checked as
// they are named. STACK_GLOBAL takes its module and name from the stack; the scan follows them
// only when they are known strings pushed right before it, directly or through the memo, so that
// a name assembled any other way is refused as unknowable rather than guessed.
#include "compiler/frontend/torchscript/pickle_scan.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/pickle_scanner.h"
#include "compiler/frontend/torchscript/zip_archive.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript::pickle {
namespace {

using E = Effect;

// Every opcode of pickle protocols 0 to 5 (CPython's Lib/pickletools.py lists them).
constexpr Opcode kOpcodes[] = {
    {'(', "MARK", Arg::kNone, E::kMark},
    {'.', "STOP", Arg::kNone, E::kStop},
    {'0', "POP", Arg::kNone, E::kPop},
    {'1', "POP_MARK", Arg::kNone, E::kPopMark},
    {'2', "DUP", Arg::kNone, E::kDup},
    {'F', "FLOAT", Arg::kLine, E::kScalar},
    {'I', "INT", Arg::kLine, E::kInt},
    {'J', "BININT", Arg::kFixed4, E::kInt},
    {'K', "BININT1", Arg::kFixed1, E::kInt},
    {'L', "LONG", Arg::kLine, E::kInt},
    {'M', "BININT2", Arg::kFixed2, E::kInt},
    {'N', "NONE", Arg::kNone, E::kScalar},
    {'P', "PERSID", Arg::kLine, E::kTextPersId},
    {'Q', "BINPERSID", Arg::kNone, E::kPersId},
    {'R', "REDUCE", Arg::kNone, E::kReduce},
    {'S', "STRING", Arg::kLine, E::kString},
    {'T', "BINSTRING", Arg::kLen4, E::kString},
    {'U', "SHORT_BINSTRING", Arg::kLen1, E::kString},
    {'V', "UNICODE", Arg::kLine, E::kString},
    {'X', "BINUNICODE", Arg::kLen4, E::kString},
    {'a', "APPEND", Arg::kNone, E::kAppend, 1},
    {'b', "BUILD", Arg::kNone, E::kBuild},
    {'c', "GLOBAL", Arg::kTwoLines, E::kGlobal},
    {'d', "DICT", Arg::kNone, E::kFromMark, 0, true},
    {'}', "EMPTY_DICT", Arg::kNone, E::kEmpty, 0, true},
    {'e', "APPENDS", Arg::kNone, E::kAppend, -1},
    {'g', "GET", Arg::kLine, E::kMemoGet},
    {'h', "BINGET", Arg::kFixed1, E::kMemoGet},
    {'i', "INST", Arg::kTwoLines, E::kInst},
    {'j', "LONG_BINGET", Arg::kFixed4, E::kMemoGet},
    {'l', "LIST", Arg::kNone, E::kFromMark},
    {']', "EMPTY_LIST", Arg::kNone, E::kEmpty},
    {'o', "OBJ", Arg::kNone, E::kObj},
    {'p', "PUT", Arg::kLine, E::kMemoPut},
    {'q', "BINPUT", Arg::kFixed1, E::kMemoPut},
    {'r', "LONG_BINPUT", Arg::kFixed4, E::kMemoPut},
    {'s', "SETITEM", Arg::kNone, E::kAppend, 2},
    {'t', "TUPLE", Arg::kNone, E::kTuple, -1},
    {')', "EMPTY_TUPLE", Arg::kNone, E::kTuple, 0},
    {'u', "SETITEMS", Arg::kNone, E::kAppend, -1},
    {'G', "BINFLOAT", Arg::kFixed8, E::kScalar},
    {0x80, "PROTO", Arg::kFixed1, E::kNeutral},
    {0x81, "NEWOBJ", Arg::kNone, E::kNewObj, 2},
    {0x82, "EXT1", Arg::kFixed1, E::kExtension},
    {0x83, "EXT2", Arg::kFixed2, E::kExtension},
    {0x84, "EXT4", Arg::kFixed4, E::kExtension},
    {0x85, "TUPLE1", Arg::kNone, E::kTuple, 1},
    {0x86, "TUPLE2", Arg::kNone, E::kTuple, 2},
    {0x87, "TUPLE3", Arg::kNone, E::kTuple, 3},
    {0x88, "NEWTRUE", Arg::kNone, E::kScalar},
    {0x89, "NEWFALSE", Arg::kNone, E::kScalar},
    {0x8a, "LONG1", Arg::kLen1, E::kInt},
    {0x8b, "LONG4", Arg::kLen4, E::kInt},
    {'B', "BINBYTES", Arg::kLen4, E::kScalar},
    {'C', "SHORT_BINBYTES", Arg::kLen1, E::kScalar},
    {0x8c, "SHORT_BINUNICODE", Arg::kLen1, E::kString},
    {0x8d, "BINUNICODE8", Arg::kLen8, E::kString},
    {0x8e, "BINBYTES8", Arg::kLen8, E::kScalar},
    {0x8f, "EMPTY_SET", Arg::kNone, E::kEmpty},
    {0x90, "ADDITEMS", Arg::kNone, E::kAppend, -1},
    {0x91, "FROZENSET", Arg::kNone, E::kFromMark},
    {0x92, "NEWOBJ_EX", Arg::kNone, E::kNewObj, 3},
    {0x93, "STACK_GLOBAL", Arg::kNone, E::kStackGlobal},
    {0x94, "MEMOIZE", Arg::kNone, E::kMemoize},
    {0x95, "FRAME", Arg::kFixed8, E::kNeutral},
    {0x96, "BYTEARRAY8", Arg::kLen8, E::kScalar},
    {0x97, "NEXT_BUFFER", Arg::kNone, E::kScalar},
    {0x98, "READONLY_BUFFER", Arg::kNone, E::kNeutral},
};

constexpr std::array<const Opcode*, 256> opcode_index() {
  std::array<const Opcode*, 256> index{};
  for (const Opcode& op : kOpcodes) index[op.code] = &op;
  return index;
}
constexpr std::array<const Opcode*, 256> kOpcodeIndex = opcode_index();

// The globals torch.jit.save writes: what torch 1.13 (Debian) and 2.11 wrote for modules with
// tensors of every dtype, quantized and sparse tensors, lists, dicts, tuples, complex numbers,
// devices, enums and custom classes (tests/torchscript/make_attribute_archives.py; the archives
// are in tests/torchscript/*/attributes/), plus the legacy list and tensor helpers of
// torch.jit._pickle that LibTorch's unpickler still reads.
struct Global {
  std::string_view module, name;
};
constexpr Global kGlobals[] = {
    {"torch._utils", "_rebuild_tensor_v2"},
    {"torch._utils", "_rebuild_qtensor"},
    {"torch._utils", "_rebuild_sparse_tensor"},
    {"torch.jit._pickle", "restore_type_tag"},
    {"torch.jit._pickle", "build_intlist"},
    {"torch.jit._pickle", "build_doublelist"},
    {"torch.jit._pickle", "build_boollist"},
    {"torch.jit._pickle", "build_tensorlist"},
    {"torch.jit._pickle", "build_tensor_from_id"},
    {"collections", "OrderedDict"},
    {"builtins", "complex"},
    {"torch", "device"},
};
// torch.<dtype>Storage names a tensor's dtype: LibTorch 1.13's dtypes, then those torch 2.x added.
// clang-format off
constexpr std::string_view kStorageDtypes[] = {
    "Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double", "ComplexHalf",
    "ComplexFloat", "ComplexDouble", "Bool", "QInt8", "QUInt8", "QInt32", "BFloat16", "QUInt4x2",
    "QUInt2x4",
    "UInt16", "UInt32", "UInt64", "Float8_e5m2", "Float8_e4m3fn", "Float8_e5m2fnuz",
    "Float8_e4m3fnuz", "Float8_e8m0fnu"};
// clang-format on
// torch.<qscheme> names a quantized tensor's scheme.
constexpr std::string_view kQSchemes[] = {"per_tensor_affine", "per_channel_affine",
                                          "per_tensor_symmetric", "per_channel_symmetric",
                                          "per_channel_affine_float_qparams"};

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s) {
    if (!std::isalnum(c) && c != '_') return false;
  }
  return true;
}

// Strings longer than any global name, storage key or attribute name are not kept.
constexpr size_t kMaxKeptString = 256;

// A string node for a string-pushing opcode's argument: known where the argument decodes plainly
// (text opcodes with escapes, and Python 2 strings with non-ASCII bytes, are left unknown).
std::shared_ptr<Node> string_node(uint8_t code, std::string_view arg) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kString;
  node->known = false;
  if (code == 'S') {  // a quoted repr: 'os'
    if (arg.size() < 2 || (arg[0] != '\'' && arg[0] != '"') || arg.back() != arg[0]) return node;
    arg = arg.substr(1, arg.size() - 2);
  }
  if (code == 'S' || code == 'V' || code == 'T' || code == 'U') {
    for (unsigned char c : arg) {
      if (c == '\\' || c >= 0x80) return node;
    }
  }
  if (arg.size() > kMaxKeptString) return node;
  node->known = true;
  node->text = std::string(arg);
  return node;
}

std::optional<uint64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// A text integer (INT, LONG): decimal, optionally signed, LONG's with a trailing 'L'; INT's "01"
// and "00" are Python 2's True and False. Nothing outside int64 is an integer the checks use.
std::optional<int64_t> text_int(std::string_view s) {
  if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  const std::optional<uint64_t> v = decimal(s);
  if (!v || *v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return negative ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
}

// A little-endian two's complement integer of at most 8 bytes (BININT*, LONG1, LONG4).
std::optional<int64_t> binary_int(std::string_view bytes, bool is_signed) {
  if (bytes.size() > 8) return std::nullopt;
  if (bytes.empty()) return 0;
  uint64_t v =
      read_le(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  const unsigned bits = 8 * static_cast<unsigned>(bytes.size());
  if (is_signed && bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(v);
}

}  // namespace

Scanner::Scanner(const std::string& record, std::string_view bytes,
                 const std::map<std::string, uint64_t>* record_sizes)
    : record_(record), shown_(quoted_name(record)), in_(bytes), record_sizes_(record_sizes) {}

Error Scanner::refuse(const std::string& what) const {
  return Error{
      fmt::format("unsafe pickle: record '{}' {}; {}", shown_, what, kRefusedBeforeLoading)};
}

Error Scanner::corrupt(const std::string& what) const {
  return Error{fmt::format("corrupt pickle: record '{}' {}", shown_, what)};
}

std::optional<std::string_view> Scanner::line() {
  const size_t nl = in_.find('\n', pos_);
  if (nl == std::string_view::npos) return std::nullopt;
  std::string_view s = in_.substr(pos_, nl - pos_);
  pos_ = nl + 1;
  return s;
}

Status Scanner::read_arg(const Opcode& op, uint64_t at) {
  const uint64_t left = in_.size() - pos_;
  const auto cut = [&] {
    return corrupt(fmt::format("ends inside its {} opcode at byte {}", op.name, at));
  };
  uint64_t n = 0;
  switch (op.arg) {
    case Arg::kNone:
      return Status::success();
    case Arg::kFixed1:
      n = 1;
      break;
    case Arg::kFixed2:
      n = 2;
      break;
    case Arg::kFixed4:
      n = 4;
      break;
    case Arg::kFixed8:
      n = 8;
      break;
    case Arg::kLine:
    case Arg::kTwoLines: {
      const auto first = line();
      if (!first) return cut();
      arg_ = *first;
      if (op.arg == Arg::kLine) return Status::success();
      const auto second = line();
      if (!second) return cut();
      arg2_ = *second;
      return Status::success();
    }
    case Arg::kLen1:
    case Arg::kLen4:
    case Arg::kLen8: {
      const int width = op.arg == Arg::kLen1 ? 1 : op.arg == Arg::kLen4 ? 4 : 8;
      if (left < static_cast<uint64_t>(width)) return cut();
      const uint64_t len = read_le(reinterpret_cast<const uint8_t*>(in_.data()) + pos_, width);
      if (len > left - static_cast<uint64_t>(width)) return cut();
      arg_ = in_.substr(pos_ + static_cast<uint64_t>(width), len);
      pos_ += static_cast<uint64_t>(width) + len;
      return Status::success();
    }
  }
  if (left < n) return cut();
  arg_ = in_.substr(pos_, n);
  pos_ += n;
  return Status::success();
}

Status Scanner::check_global(std::string_view module, std::string_view name, const Opcode& op,
                             uint64_t at) const {
  if (allowed_pickle_global(module, name)) return Status::success();
  return refuse(fmt::format(
      "refers to the Python global '{}.{}' ({} at byte {}), which a pickle can call to run code "
      "when it is loaded (TorchScript's pickles name only torch's tensor, storage and list "
      "helpers, collections.OrderedDict, builtins.complex, torch.device and the archive's own "
      "__torch__ classes)",
      sanitize_comment(module), sanitize_comment(name), op.name, at));
}

Status Scanner::run() {
  if (in_.empty()) {
    return corrupt("is empty; a pickle holds at least a protocol header and a STOP opcode");
  }
  while (pos_ < in_.size()) {
    const uint64_t at = pos_;
    const uint8_t code = static_cast<uint8_t>(in_[pos_++]);
    const Opcode* op = kOpcodeIndex[code];
    if (!op) {
      return corrupt(
          fmt::format("is not a pickle: byte {} is 0x{:02x}, which is no pickle opcode", at, code));
    }
    ZOC_TRY(read_arg(*op, at));
    if (op->effect == E::kStop) return Status::success();
    const int fresh_before = fresh_strings_;
    ZOC_TRY(step(*op, at));
    const Node* pushed = stack_.empty() ? nullptr : stack_.back().node.get();
    if (op->effect == E::kMemoPut || op->effect == E::kMemoize || op->effect == E::kNeutral) {
      fresh_strings_ = fresh_before;  // these leave the stack as it is
    } else if ((op->effect == E::kString || op->effect == E::kMemoGet) && pushed &&
               pushed->kind == Node::Kind::kString && pushed->known) {
      fresh_strings_ = std::min(fresh_before + 1, 2);
    } else {
      fresh_strings_ = 0;
    }
  }
  return corrupt(
      fmt::format("ends at byte {} without the STOP opcode that closes a pickle", in_.size()));
}

Status Scanner::step(const Opcode& op, uint64_t at) {
  switch (op.effect) {
    case E::kStop:
    case E::kNeutral:
      return Status::success();
    case E::kMark:
      ZOC_TRY(room(at));
      marks_.push_back(stack_.size());
      return Status::success();
    case E::kPop:
      ZOC_TRY(pop(1, op, at));
      return Status::success();
    case E::kPopMark:
      ZOC_TRY(pop_mark(op, at));
      return Status::success();
    case E::kDup: {
      Slot* t = nullptr;
      ZOC_ASSIGN_OR_RETURN(t, top(op, at));
      return push(*t);
    }
    case E::kScalar:
    case E::kTextPersId:
      return push(Slot{});
    case E::kInt:
      return push_int(op, at);
    case E::kString: {
      auto node = string_node(op.code, arg_);
      // LibTorch's .debug_pkl format with a string table starts with its name.
      if (!seen_string_ && node->known && node->text == "FORMAT_WITH_STRING_TABLE" &&
          record_.size() > 10 && record_.compare(record_.size() - 10, 10, ".debug_pkl") == 0) {
        string_table_format_ = true;
      }
      seen_string_ = true;
      return push(Slot{Slot::Kind::kNode, 0, std::move(node)});
    }
    case E::kTuple: {
      std::vector<Slot> items;
      if (op.count < 0) {
        ZOC_ASSIGN_OR_RETURN(items, pop_mark(op, at));
      } else {
        ZOC_ASSIGN_OR_RETURN(items, pop(static_cast<size_t>(op.count), op, at));
      }
      ZOC_ASSIGN_OR_RETURN(Slot t, make(Node::Kind::kTuple, std::move(items), false, at));
      return push(std::move(t));
    }
    case E::kEmpty:
    case E::kFromMark: {
      std::vector<Slot> items;
      if (op.effect == E::kFromMark) {
        ZOC_ASSIGN_OR_RETURN(items, pop_mark(op, at));
      }
      ZOC_ASSIGN_OR_RETURN(Slot c, make(Node::Kind::kContainer, std::move(items), op.dict, at));
      return push(std::move(c));
    }
    case E::kAppend: {
      std::vector<Slot> items;
      if (op.count < 0) {
        ZOC_ASSIGN_OR_RETURN(items, pop_mark(op, at));
      } else {
        ZOC_ASSIGN_OR_RETURN(items, pop(static_cast<size_t>(op.count), op, at));
      }
      Slot* into = nullptr;
      ZOC_ASSIGN_OR_RETURN(into, top(op, at));
      return add(*into, std::move(items), op, at);
    }
    case E::kBuild: {
      ZOC_ASSIGN_OR_RETURN(std::vector<Slot> state, pop(1, op, at));
      Slot* object = nullptr;
      ZOC_ASSIGN_OR_RETURN(object, top(op, at));
      return add(*object, std::move(state), op, at);
    }
    case E::kMemoGet:
    case E::kMemoPut:
    case E::kMemoize:
      return memo(op, at);
    case E::kGlobal:
    case E::kStackGlobal:
    case E::kInst:
    case E::kObj:
    case E::kReduce:
    case E::kNewObj:
    case E::kPersId:
    case E::kExtension:
      return call(op, at);
  }
  return Status::success();
}

Status Scanner::push_int(const Opcode& op, uint64_t at) {
  std::optional<int64_t> v;
  if (op.arg == Arg::kLine) {
    if (op.code == 'I' && (arg_ == "00" || arg_ == "01")) return push(Slot{});  // a bool
    v = text_int(arg_);
    if (!v && arg_.find_first_not_of("+-0123456789L") != std::string_view::npos) {
      return corrupt(fmt::format("has no integer after its {} opcode at byte {}", op.name, at));
    }
  } else {
    v = binary_int(arg_, op.code == 'J' || op.code == 0x8a || op.code == 0x8b);
  }
  if (!v) return push(Slot{});  // past int64: no size, stride or offset LibTorch reads
  return push(Slot{Slot::Kind::kInt, *v, nullptr});
}

Status Scanner::memo(const Opcode& op, uint64_t at) {
  std::optional<uint64_t> key;
  if (op.effect == E::kMemoize) {
    key = memo_.size();
  } else if (op.arg == Arg::kLine) {
    key = decimal(arg_);
  } else {
    key = read_le(reinterpret_cast<const uint8_t*>(arg_.data()), static_cast<int>(arg_.size()));
  }
  if (!key) {
    return corrupt(fmt::format("has no memo index after its {} opcode at byte {}", op.name, at));
  }
  if (op.effect == E::kMemoGet) {
    if (*key >= memo_.size()) {
      return corrupt(fmt::format("reads memo entry {} ({} at byte {}), which it never stored", *key,
                                 op.name, at));
    }
    return push(memo_[*key]);
  }
  // LibTorch stores memo entries in order whatever their index says, Python at their index: the
  // two read the same only if the indices count up from 0, as every pickler writes them.
  if (*key != memo_.size()) {
    return refuse(fmt::format(
        "stores memo entry {} ({} at byte {}) where entry {} comes next, which LibTorch and "
        "Python would read differently",
        *key, op.name, at, memo_.size()));
  }
  Slot* t = nullptr;
  ZOC_ASSIGN_OR_RETURN(t, top(op, at));
  ZOC_TRY(room(at));
  memo_.push_back(*t);
  return Status::success();
}

// The opcodes that name or call a global, a class or a persistent id.
Status Scanner::call(const Opcode& op, uint64_t at) {
  auto global = [](std::string text) {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::kGlobal;
    node->text = std::move(text);
    return Slot{Slot::Kind::kNode, 0, std::move(node)};
  };
  switch (op.effect) {
    case E::kGlobal:
      ZOC_TRY(check_global(arg_, arg2_, op, at));
      return push(global(fmt::format("{}.{}", arg_, arg2_)));
    case E::kStackGlobal: {
      if (fresh_strings_ < 2) {
        return refuse(
            fmt::format("loads a global whose name it computes (STACK_GLOBAL at byte "
                        "{} without two strings pushed right before it), so zoc "
                        "cannot tell what it would run",
                        at));
      }
      ZOC_ASSIGN_OR_RETURN(const std::vector<Slot> names, pop(2, op, at));
      ZOC_TRY(check_global(names[0].node->text, names[1].node->text, op, at));
      return push(global(names[0].node->text + "." + names[1].node->text));
    }
    case E::kExtension:
      return refuse(
          fmt::format("loads a global through Python's copyreg extension registry "
                      "({} at byte {}), so zoc cannot tell what it would run",
                      op.name, at));
    case E::kInst:
    case E::kObj: {
      if (op.effect == E::kInst) ZOC_TRY(check_global(arg_, arg2_, op, at));
      ZOC_ASSIGN_OR_RETURN(std::vector<Slot> args, pop_mark(op, at));
      ZOC_ASSIGN_OR_RETURN(Slot object, make(Node::Kind::kContainer, std::move(args), false, at));
      return push(std::move(object));
    }
    case E::kNewObj: {
      ZOC_ASSIGN_OR_RETURN(std::vector<Slot> parts, pop(static_cast<size_t>(op.count), op, at));
      ZOC_ASSIGN_OR_RETURN(Slot object, make(Node::Kind::kContainer, std::move(parts), false, at));
      return push(std::move(object));
    }
    case E::kPersId: {
      ZOC_ASSIGN_OR_RETURN(const std::vector<Slot> id, pop(1, op, at));
      ZOC_ASSIGN_OR_RETURN(Slot s, storage(id[0], at));
      return push(std::move(s));
    }
    case E::kReduce: {
      ZOC_ASSIGN_OR_RETURN(std::vector<Slot> parts, pop(2, op, at));
      const Node* callee = parts[0].node.get();
      const std::string name =
          callee && callee->kind == Node::Kind::kGlobal ? callee->text : std::string();
      if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_qtensor") {
        ZOC_ASSIGN_OR_RETURN(Slot t, tensor(parts[1], at));
        return push(std::move(t));
      }
      const Node* args = parts[1].node.get();
      const bool same_value = name == "torch.jit._pickle.restore_type_tag" ||
                              name.rfind("torch.jit._pickle.build_", 0) == 0;
      if (same_value && args && args->kind == Node::Kind::kTuple && args->items_kept &&
          !args->items.empty()) {
        return push(args->items[0]);  // the value itself, typed (or as a typed list)
      }
      ZOC_ASSIGN_OR_RETURN(Slot result, make(Node::Kind::kContainer, std::move(parts), false, at));
      return push(std::move(result));
    }
    default:
      return Status::success();
  }
}

}  // namespace zoc::torchscript::pickle

namespace zoc::torchscript {

bool allowed_pickle_global(std::string_view module, std::string_view name) {
  using namespace pickle;  // the lists above
  for (const Global& g : kGlobals) {
    if (g.module == module && g.name == name) return true;
  }
  if (module == "torch") {
    constexpr std::string_view kSuffix = "Storage";
    if (name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix) {
      const std::string_view dtype = name.substr(0, name.size() - kSuffix.size());
      for (std::string_view d : kStorageDtypes) {
        if (d == dtype) return true;
      }
    }
    for (std::string_view q : kQSchemes) {
      if (q == name) return true;
    }
    return false;
  }
  // The archive's own classes (modules, enums, custom classes): TorchScript resolves them from
  // the archive's code; Python has no module __torch__ to import them from.
  constexpr std::string_view kTorchClasses = "__torch__";
  if (module.substr(0, kTorchClasses.size()) != kTorchClasses || !is_identifier(name) ||
      (module.size() > kTorchClasses.size() && module[kTorchClasses.size()] != '.')) {
    return false;
  }
  for (size_t begin = 0; begin <= module.size();) {
    const size_t dot = std::min(module.find('.', begin), module.size());
    if (!is_identifier(module.substr(begin, dot - begin))) return false;
    begin = dot + 1;
  }
  return true;
}

Status check_pickle(const std::string& record, std::string_view bytes,
                    const std::map<std::string, uint64_t>* record_sizes) {
  return pickle::Scanner(record, bytes, record_sizes).run();
}

}  // namespace zoc::torchscript
