// The pickles of a TorchScript archive (data.pkl, constants.pkl, the code's .debug_pkl files),
// checked without unpickling them, before LibTorch reads any.
//
// A pickle can name any Python global and call it, which is how hostile model files run code
// when Python loads them. LibTorch's own unpickler resolves only TorchScript's globals, but zoc
// refuses a file that names anything else, so that what it accepts is also safe for the user's
// next tool: every global referenced (GLOBAL and INST name theirs inline; STACK_GLOBAL takes two
// strings from the stack, which must have been pushed right before it, directly or through the
// memo) is checked against the allow-list in pickle_scan.cpp, taken from what torch 1.13 and 2.11
// write. And a pickle can describe values that LibTorch builds without checking them: nested a
// million deep (LibTorch frees them recursively and overflows its stack), or tensors whose view
// reaches past their storage, or storages larger than their records (LibTorch reads memory it
// does not own when such a tensor is read). The scan models the unpickler's stack
// (pickle_scanner.h) through every opcode of pickle protocols 0 to 5, without building any
// object, in memory bounded by the pickle's size, and refuses those too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "zoc/core/expected.h"

namespace zoc::torchscript {

// Whether `module.name` is a global torch.jit.save writes (see the list in pickle_scan.cpp).
bool allowed_pickle_global(std::string_view module, std::string_view name);

// Checks the pickle `bytes` of record `record`: a complete opcode stream up to its STOP,
// referencing allowed globals only, nesting at most pickle::kMaxDepth deep. With `record_sizes`
// (every record's uncompressed size by lower-case name, since LibTorch finds records ignoring
// case), also that its tensors lie inside their storages and its storages inside their records:
// for data.pkl and constants.pkl, whose tensors LibTorch builds and zoc reads (torch 2.x's
// traced_inputs.pkl names storages whose records it leaves empty; LibTorch 1.13 never reads it).
// Errors name the record, the opcode's byte and, for tensors, the dict keys that lead to them.
Status check_pickle(const std::string& record, std::string_view bytes,
                    const std::map<std::string, uint64_t>* record_sizes = nullptr);

}  // namespace zoc::torchscript
