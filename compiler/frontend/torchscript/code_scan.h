// The code records of a TorchScript archive (<root>/code/**.py: Python-like TorchScript source),
// checked as text before LibTorch compiles them, for what LibTorch would run or crash on while
// it loads the file:
//   - `__setstate__`: LibTorch runs an object's __setstate__ while it unpickles the object, that
//     is while loading, before zoc could see or refuse what the method does;
//   - nesting and length that overflow LibTorch's recursive parser and compiler: 10,000 nested
//     brackets or 10,000 operators in one statement crash LibTorch 1.13 (SIGSEGV), and so would
//     blocks nested thousands deep;
//   - a class attribute assigned without a type (`x = 3` in the body of a class other than an
//     enum), on which LibTorch 1.13's importer dereferences the missing type (SIGSEGV; found by
//     fuzz_torchscript).
// torch.jit.save writes one operation per statement, brackets a few levels deep and class
// constants as `name : Final[type] = value`, so the bounds are far from what real code needs
// (the 68-model corpus: 4 levels of brackets, 1 operator per statement, 30 columns of indent).
// The scan is lexical (strings and comments skipped, brackets, operators, indentation and
// statements counted), needs no LibTorch, and bounds what the code can make LibTorch do only as
// far as these checks reach: how long LibTorch takes to compile code it accepts is not bounded.
#pragma once

#include <string>
#include <string_view>

#include "zoc/core/expected.h"

namespace zoc::torchscript {

inline constexpr int kMaxCodeBracketDepth = 64;
inline constexpr int kMaxCodeOperators = 256;  // per statement
inline constexpr int kMaxCodeIndent = 256;     // columns

// Checks the code record `record` (its name as stored) holding `code`. Errors name the record
// and the line.
Status check_code(const std::string& record, std::string_view code);

}  // namespace zoc::torchscript
