// The pickles of a TorchScript archive (data.pkl, constants.pkl, the code's .debug_pkl files),
// checked without unpickling them: a pickle can name any Python global and call it, which is how
// hostile model files run code when Python loads them. LibTorch's own unpickler resolves only
// TorchScript's globals, but zoc refuses a file that names anything else before LibTorch reads
// it, so that what it accepts is also safe for the user's next tool. The scan walks the opcode
// stream (every opcode of pickle protocols 0 to 5, without building any object) and checks every
// global it references (GLOBAL and INST name theirs inline; STACK_GLOBAL takes two strings from
// the stack, which must have been pushed right before it, directly or through the memo) against
// the allow-list in pickle_scan.cpp, taken from what torch 1.13 and 2.11 write.
#pragma once

#include <string>
#include <string_view>

#include "zoc/core/expected.h"

namespace zoc::torchscript {

// Whether `module.name` is a global torch.jit.save writes (see the list in pickle_scan.cpp).
bool allowed_pickle_global(std::string_view module, std::string_view name);

// Checks the pickle `bytes` of record `record` (as messages quote it): a complete opcode stream
// up to its STOP, referencing allowed globals only. Errors name the record and the global.
Status check_pickle(const std::string& record, std::string_view bytes);

}  // namespace zoc::torchscript
