// The pickle scan's machine (pickle_scan.h says what the scan refuses and why), shared by its two
// files: pickle_scan.cpp walks the opcode stream and checks globals, pickle_values.cpp keeps the
// model of the unpickler's stack that the walk drives, and checks what LibTorch would trust in
// it: how deep values nest (LibTorch destroys nested values recursively, so 10^6 nested tuples
// overflow its stack) and whether each tensor's view lies inside its storage and each storage
// inside its record (LibTorch builds both without checking, and reading such a tensor reads
// memory it does not own).
//
// The model is LibTorch's unpickler (torch/csrc/jit/serialization/unpickler.cpp) where Python's
// and LibTorch's agree, and a refusal where they differ or where torch.jit.save never writes a
// form: marks are positions in the stack, as in LibTorch, but an opcode may not reach below the
// last mark (Python's rule); memo entries are put in order, the only order in which both read
// them alike; a container is filled before it goes into another and never after, so that its
// depth is known when it is placed and no cycle can form. What the model keeps of a value is
// what those checks need: integers, short strings, globals, storages, the items of small tuples
// (tensor arguments, storage ids, sizes and strides), and every container's depth.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zoc/core/expected.h"

namespace zoc::torchscript::pickle {

// What an opcode does to the stack.
enum class Effect : uint8_t {
  kMark,
  kStop,
  kPop,
  kPopMark,
  kDup,
  kScalar,    // pushes a number, bytes, None, a bool, a buffer: nothing the checks read
  kInt,       // pushes an integer (INT, BININT*, LONG*)
  kString,    // pushes its argument as a string
  kTuple,     // pops `count` items (count < 0: down to the mark) into a tuple
  kEmpty,     // pushes an empty list, dict or set
  kFromMark,  // LIST, DICT, FROZENSET: the items down to the mark into a container
  kAppend,    // APPEND, SETITEM, ADDITEMS(mark)...: `count` items (< 0: down to the mark)
              // added to the container below them
  kMemoGet,
  kMemoPut,
  kMemoize,
  kGlobal,       // GLOBAL: module and name inline
  kStackGlobal,  // module and name from the stack
  kInst,         // INST: a global inline, called with the items down to the mark
  kObj,          // OBJ: a class and its arguments down to the mark
  kReduce,       // REDUCE: a callable called with an argument tuple
  kNewObj,       // NEWOBJ (count 2), NEWOBJ_EX (count 3)
  kBuild,        // BUILD: an object's state added to it
  kPersId,       // BINPERSID: a persistent id (TorchScript: a tensor storage)
  kTextPersId,   // PERSID
  kExtension,    // EXT1/2/4: a global from the copyreg extension registry
  kNeutral,      // PROTO, FRAME, READONLY_BUFFER
};

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

struct Opcode {
  uint8_t code;
  const char* name;
  Arg arg;
  Effect effect;
  int count = 0;      // kTuple, kAppend, kNewObj: items it pops (-1: down to the mark)
  bool dict = false;  // kEmpty, kFromMark: the container is a dict
};

// Nesting beyond this is refused: TorchScript's pickles nest a few levels per submodule (object,
// its state, a tensor's arguments: ResNet-50's data.pkl 12), and Python itself refuses to pickle
// values nested more than about 1000 deep.
inline constexpr uint32_t kMaxDepth = 1000;
// Values alive at once (the stack, its marks, the memo): LibTorch holds each as a 16-byte IValue
// and this model as a few times that; ResNet-50's data.pkl has 4,000. A pickle of more is
// refused rather than held.
inline constexpr uint64_t kMaxLiveValues = uint64_t{1} << 23;
// Tuple items are kept up to this many (tensor arguments, storage ids, sizes, strides).
inline constexpr size_t kMaxKeptItems = 64;

struct Node;

// One stack or memo entry: an integer held inline, a node, or a value the checks do not read.
struct Slot {
  enum class Kind : uint8_t { kScalar, kInt, kNode };
  Kind kind = Kind::kScalar;
  int64_t i = 0;
  std::shared_ptr<Node> node;
};

struct Storage {
  std::string record;  // the record holding its bytes: "<root>/data/<key>"
  std::string dtype;   // "Float"
  int64_t element_size = 0;
  int64_t numel = 0;
};

struct Node {
  enum class Kind : uint8_t { kString, kGlobal, kTuple, kContainer, kStorage, kTensor };
  Kind kind = Kind::kContainer;
  bool known = true;        // kString: the text is the string (short and plainly encoded)
  bool dict = false;        // kContainer: a dict (for the names of tensors)
  bool sealed = false;      // placed into another container: holds what it holds for good
  uint32_t depth = 0;       // containers and tuples: 1 + the depth of their deepest item
  std::string text;         // kString: the string; kGlobal: "module.name"
  bool items_kept = false;  // kTuple: `items` holds every item
  std::vector<Slot> items;
  // Tuples and containers: how many items they hold, and the range of those that are integers
  // (the string-table indices of a .debug_pkl's sources).
  uint64_t count = 0;
  bool only_ints = true;
  int64_t min_int = INT64_MAX, max_int = INT64_MIN;
  Storage storage;  // kStorage
};

class Scanner {
 public:
  // `record` is the pickle's record name; `record_sizes` the sizes of the archive's records by
  // lower-case name, for the storages its tensors name, or nullptr not to check tensors.
  Scanner(const std::string& record, std::string_view bytes,
          const std::map<std::string, uint64_t>* record_sizes);
  Status run();

 private:
  // pickle_scan.cpp: the walk.
  Status read_arg(const Opcode& op, uint64_t at);
  std::optional<std::string_view> line();
  Status check_global(std::string_view module, std::string_view name, const Opcode& op,
                      uint64_t at) const;
  Status step(const Opcode& op, uint64_t at);
  Status push_int(const Opcode& op, uint64_t at);
  Status push_string(const Opcode& op);
  Status memo(const Opcode& op, uint64_t at);
  Status call(const Opcode& op, uint64_t at);

  // pickle_values.cpp: the stack.
  Status room(uint64_t at) const;  // refused once kMaxLiveValues values are alive
  Status push(Slot s);
  // The top `n` entries above the last mark, in stack order, removed; refused if fewer.
  Expected<std::vector<Slot>> pop(size_t n, const Opcode& op, uint64_t at);
  // Everything above the last mark, removed with the mark; refused without a mark.
  Expected<std::vector<Slot>> pop_mark(const Opcode& op, uint64_t at);
  // The top entry above the last mark, or an error.
  Expected<Slot*> top(const Opcode& op, uint64_t at);
  // A new tuple or container holding `items` (sealing them), or an error past kMaxDepth.
  Expected<Slot> make(Node::Kind kind, std::vector<Slot> items, bool dict, uint64_t at);
  // Adds `items` to the container `into` (APPEND, SETITEM, BUILD, ...).
  Status add(Slot& into, std::vector<Slot> items, const Opcode& op, uint64_t at);
  Status deeper(uint32_t depth, uint64_t at) const;
  // Counts `item` into `c`'s summary (count, integer range).
  static void summarize(Node& c, const Slot& item);
  // A .debug_pkl source (text indices, file name index, line): its indices inside the table.
  Status check_source(const Node& t, uint64_t at) const;
  // The storage a BINPERSID names, checked against its record.
  Expected<Slot> storage(const Slot& id, uint64_t at);
  // _rebuild_tensor_v2 / _rebuild_qtensor: the view checked against its storage.
  Expected<Slot> tensor(const Slot& args, uint64_t at);
  // The tensor being built, by the dict keys that lead to it ("layer1.0.conv1.weight").
  std::string tensor_name() const;

  Error refuse(const std::string& what) const;
  Error corrupt(const std::string& what) const;

  const std::string record_;
  const std::string shown_;  // record_ as messages quote it
  std::string_view in_;
  const std::map<std::string, uint64_t>* record_sizes_;
  uint64_t pos_ = 0;
  std::string_view arg_, arg2_;
  std::vector<Slot> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK, as LibTorch keeps them
  std::vector<Slot> memo_;
  // A .debug_pkl in LibTorch's FORMAT_WITH_STRING_TABLE: the size of its string table, once
  // built (-1 before; LibTorch indexes the table with each source's indices unchecked).
  bool string_table_format_ = false, seen_string_ = false;
  int64_t text_table_ = -1;
  // Known strings pushed right before, directly or from the memo (0 to 2): STACK_GLOBAL takes
  // its names only from those, so that a name assembled any other way is refused, not followed.
  int fresh_strings_ = 0;
  int64_t tensors_ = 0;  // tensors built so far, for names when no dict key leads to one
};

// The element size of torch.<dtype>Storage, or 0 if `dtype` is no storage type.
int64_t storage_element_size(std::string_view dtype);

}  // namespace zoc::torchscript::pickle
