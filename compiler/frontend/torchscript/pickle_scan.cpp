// The opcode walk and allow-list of pickle_scan.h. The walk tracks, instead of a stack of
// objects, only whether each of the top two stack entries is a known string (and the same for
// memo entries), which is all STACK_GLOBAL needs: an opcode that is not a plain push leaves both
// unknown, so a name that is not pushed right before STACK_GLOBAL is refused as unknowable rather
// than guessed. Strings longer than any global name, and memo entries past a bound, are not
// tracked, which keeps the walk's memory small for any input.
#include "compiler/frontend/torchscript/pickle_scan.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compiler/frontend/torchscript/zip_archive.h"
#include "compiler/support/sanitize.h"

namespace zoc::torchscript {
namespace {

// What follows an opcode byte.
enum class Arg : uint8_t {
  kNone,
  kFixed1,
  kFixed2,
  kFixed4,
  kFixed8,
  kLine,
  kTwoLines,
  kLen1,
  kLen4,
  kLen8
};
// What an opcode does to the scan's state.
enum class Role : uint8_t {
  kOther,        // pops or rewrites the stack: the top entries become unknown
  kPush,         // pushes something that is not a string
  kPushString,   // pushes its argument as a string
  kMemoGet,      // pushes a memo entry
  kMemoPut,      // copies the top into the memo at its argument
  kMemoize,      // copies the top into the memo at the memo's size
  kNeutral,      // PROTO, FRAME: no stack effect
  kGlobal,       // GLOBAL, INST: module and name inline
  kStackGlobal,  // module and name from the stack
  kExtension,    // EXT1/2/4: a global from the copyreg extension registry
  kStop,
};

struct Opcode {
  uint8_t code;
  const char* name;
  Arg arg;
  Role role;
};

// Every opcode of pickle protocols 0 to 5 (CPython's Lib/pickletools.py lists them).
constexpr Opcode kOpcodes[] = {
    {'(', "MARK", Arg::kNone, Role::kPush},
    {'.', "STOP", Arg::kNone, Role::kStop},
    {'0', "POP", Arg::kNone, Role::kOther},
    {'1', "POP_MARK", Arg::kNone, Role::kOther},
    {'2', "DUP", Arg::kNone, Role::kPush},
    {'F', "FLOAT", Arg::kLine, Role::kPush},
    {'I', "INT", Arg::kLine, Role::kPush},
    {'J', "BININT", Arg::kFixed4, Role::kPush},
    {'K', "BININT1", Arg::kFixed1, Role::kPush},
    {'L', "LONG", Arg::kLine, Role::kPush},
    {'M', "BININT2", Arg::kFixed2, Role::kPush},
    {'N', "NONE", Arg::kNone, Role::kPush},
    {'P', "PERSID", Arg::kLine, Role::kPush},
    {'Q', "BINPERSID", Arg::kNone, Role::kOther},
    {'R', "REDUCE", Arg::kNone, Role::kOther},
    {'S', "STRING", Arg::kLine, Role::kPushString},
    {'T', "BINSTRING", Arg::kLen4, Role::kPushString},
    {'U', "SHORT_BINSTRING", Arg::kLen1, Role::kPushString},
    {'V', "UNICODE", Arg::kLine, Role::kPushString},
    {'X', "BINUNICODE", Arg::kLen4, Role::kPushString},
    {'a', "APPEND", Arg::kNone, Role::kOther},
    {'b', "BUILD", Arg::kNone, Role::kOther},
    {'c', "GLOBAL", Arg::kTwoLines, Role::kGlobal},
    {'d', "DICT", Arg::kNone, Role::kOther},
    {'}', "EMPTY_DICT", Arg::kNone, Role::kPush},
    {'e', "APPENDS", Arg::kNone, Role::kOther},
    {'g', "GET", Arg::kLine, Role::kMemoGet},
    {'h', "BINGET", Arg::kFixed1, Role::kMemoGet},
    {'i', "INST", Arg::kTwoLines, Role::kGlobal},
    {'j', "LONG_BINGET", Arg::kFixed4, Role::kMemoGet},
    {'l', "LIST", Arg::kNone, Role::kOther},
    {']', "EMPTY_LIST", Arg::kNone, Role::kPush},
    {'o', "OBJ", Arg::kNone, Role::kOther},
    {'p', "PUT", Arg::kLine, Role::kMemoPut},
    {'q', "BINPUT", Arg::kFixed1, Role::kMemoPut},
    {'r', "LONG_BINPUT", Arg::kFixed4, Role::kMemoPut},
    {'s', "SETITEM", Arg::kNone, Role::kOther},
    {'t', "TUPLE", Arg::kNone, Role::kOther},
    {')', "EMPTY_TUPLE", Arg::kNone, Role::kPush},
    {'u', "SETITEMS", Arg::kNone, Role::kOther},
    {'G', "BINFLOAT", Arg::kFixed8, Role::kPush},
    {0x80, "PROTO", Arg::kFixed1, Role::kNeutral},
    {0x81, "NEWOBJ", Arg::kNone, Role::kOther},
    {0x82, "EXT1", Arg::kFixed1, Role::kExtension},
    {0x83, "EXT2", Arg::kFixed2, Role::kExtension},
    {0x84, "EXT4", Arg::kFixed4, Role::kExtension},
    {0x85, "TUPLE1", Arg::kNone, Role::kOther},
    {0x86, "TUPLE2", Arg::kNone, Role::kOther},
    {0x87, "TUPLE3", Arg::kNone, Role::kOther},
    {0x88, "NEWTRUE", Arg::kNone, Role::kPush},
    {0x89, "NEWFALSE", Arg::kNone, Role::kPush},
    {0x8a, "LONG1", Arg::kLen1, Role::kPush},
    {0x8b, "LONG4", Arg::kLen4, Role::kPush},
    {'B', "BINBYTES", Arg::kLen4, Role::kPush},
    {'C', "SHORT_BINBYTES", Arg::kLen1, Role::kPush},
    {0x8c, "SHORT_BINUNICODE", Arg::kLen1, Role::kPushString},
    {0x8d, "BINUNICODE8", Arg::kLen8, Role::kPushString},
    {0x8e, "BINBYTES8", Arg::kLen8, Role::kPush},
    {0x8f, "EMPTY_SET", Arg::kNone, Role::kPush},
    {0x90, "ADDITEMS", Arg::kNone, Role::kOther},
    {0x91, "FROZENSET", Arg::kNone, Role::kOther},
    {0x92, "NEWOBJ_EX", Arg::kNone, Role::kOther},
    {0x93, "STACK_GLOBAL", Arg::kNone, Role::kStackGlobal},
    {0x94, "MEMOIZE", Arg::kNone, Role::kMemoize},
    {0x95, "FRAME", Arg::kFixed8, Role::kNeutral},
    {0x96, "BYTEARRAY8", Arg::kLen8, Role::kPush},
    {0x97, "NEXT_BUFFER", Arg::kNone, Role::kPush},
    {0x98, "READONLY_BUFFER", Arg::kNone, Role::kOther},
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

// A string as the stack holds it: known if decoded exactly and short enough to be a global name.
using Known = std::optional<std::string>;
constexpr size_t kMaxTrackedString = 256;
constexpr size_t kMaxTrackedMemo = 1 << 16;

Known known_if_short(std::string_view s) {
  if (s.size() > kMaxTrackedString) return std::nullopt;
  return std::string(s);
}

// The string a string-pushing opcode's argument decodes to, where that is plain: text opcodes
// with escapes, and Python 2 strings with non-ASCII bytes, are left unknown.
Known decode_string(uint8_t code, std::string_view arg) {
  if (code == 'S') {  // a quoted repr: 'os'
    if (arg.size() < 2 || (arg[0] != '\'' && arg[0] != '"') || arg.back() != arg[0]) return {};
    arg = arg.substr(1, arg.size() - 2);
  }
  if (code == 'S' || code == 'V' || code == 'T' || code == 'U') {
    for (unsigned char c : arg) {
      if (c == '\\' || c >= 0x80) return std::nullopt;
    }
  }
  return known_if_short(arg);
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

class Scanner {
 public:
  Scanner(const std::string& record, std::string_view bytes) : record_(record), in_(bytes) {}
  Status run();

 private:
  // Reads the argument of `op` at pos_ into arg_ (and, for two lines, arg2_).
  Status read_arg(const Opcode& op, uint64_t at);
  std::optional<std::string_view> line();
  Status check_global(std::string_view module, std::string_view name, const Opcode& op,
                      uint64_t at) const;
  // Python's memo, until it outgrows the bound: from then on every memo entry is unknown (and
  // MEMOIZE's index, the memo's size, is too).
  void remember(uint64_t key) {
    if (memo_lost_) return;
    if (memo_.size() >= kMaxTrackedMemo && !memo_.count(key)) {
      memo_lost_ = true;
      memo_.clear();
      return;
    }
    memo_[key] = top_;
  }
  void push(Known value) {
    below_ = std::move(top_);
    top_ = std::move(value);
  }
  Error refuse(const std::string& what) const {
    return Error{
        fmt::format("unsafe pickle: record '{}' {}; {}", record_, what, kRefusedBeforeLoading)};
  }
  Error corrupt(const std::string& what) const {
    return Error{fmt::format("corrupt pickle: record '{}' {}", record_, what)};
  }

  const std::string& record_;
  std::string_view in_;
  uint64_t pos_ = 0;
  std::string_view arg_, arg2_;
  Known top_, below_;
  std::map<uint64_t, Known> memo_;
  bool memo_lost_ = false;
};

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
    switch (op->role) {
      case Role::kStop:
        return Status::success();
      case Role::kNeutral:
        break;
      case Role::kOther:
        top_ = below_ = std::nullopt;
        break;
      case Role::kPush:
        push(std::nullopt);
        break;
      case Role::kPushString:
        push(decode_string(code, arg_));
        break;
      case Role::kGlobal:
        ZOC_TRY(check_global(arg_, arg2_, *op, at));
        top_ = below_ = std::nullopt;
        break;
      case Role::kStackGlobal:
        if (!top_ || !below_) {
          return refuse(
              fmt::format("loads a global whose name it computes (STACK_GLOBAL at byte "
                          "{} without two strings pushed right before it), so zoc "
                          "cannot tell what it would run",
                          at));
        }
        ZOC_TRY(check_global(*below_, *top_, *op, at));
        top_ = below_ = std::nullopt;
        break;
      case Role::kExtension:
        return refuse(
            fmt::format("loads a global through Python's copyreg extension registry "
                        "({} at byte {}), so zoc cannot tell what it would run",
                        op->name, at));
      case Role::kMemoGet:
      case Role::kMemoPut: {
        const std::optional<uint64_t> key =
            op->arg == Arg::kLine ? decimal(arg_)
                                  : read_le(reinterpret_cast<const uint8_t*>(arg_.data()),
                                            static_cast<int>(arg_.size()));
        if (!key) {
          return corrupt(
              fmt::format("has no memo index after its {} opcode at byte {}", op->name, at));
        }
        if (op->role == Role::kMemoGet) {
          const auto it = memo_.find(*key);
          push(it == memo_.end() ? std::nullopt : it->second);
        } else {
          remember(*key);
        }
        break;
      }
      case Role::kMemoize:
        remember(memo_.size());
        break;
    }
  }
  return corrupt(
      fmt::format("ends at byte {} without the STOP opcode that closes a pickle", in_.size()));
}

}  // namespace

bool allowed_pickle_global(std::string_view module, std::string_view name) {
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

Status check_pickle(const std::string& record, std::string_view bytes) {
  return Scanner(record, bytes).run();
}

}  // namespace zoc::torchscript
