// escape_for_message (compiler/support/escape.h): what a model file says reaches the terminal as
// one line that shows every byte for what it is, readable Unicode kept, and cut when long.
#include <gtest/gtest.h>

#include <string>

#include "compiler/support/escape.h"

namespace zoc {
namespace {

using namespace std::string_literals;  // NUL bytes

TEST(EscapeForMessage, ControlBytesBecomeVisible) {
  EXPECT_EQ(escape_for_message("layer1.0.conv1"), "layer1.0.conv1");
  EXPECT_EQ(escape_for_message("\x1b]0;owned\x07\x1b[2J"), "\\x1b]0;owned\\x07\\x1b[2J");
  EXPECT_EQ(escape_for_message("a\nmodel.pt:1:1: note: ok"), "a\\nmodel.pt:1:1: note: ok");
  EXPECT_EQ(escape_for_message("tab\there\r"), "tab\\there\\r");
  EXPECT_EQ(escape_for_message("nul\0end"s), "nul\\x00end");
  EXPECT_EQ(escape_for_message("back\\slash \x7f"), "back\\\\slash \\x7f");
}

TEST(EscapeForMessage, ReadableUnicodeStaysAndHiddenCodePointsDoNot) {
  EXPECT_EQ(escape_for_message("Größe × 2"), "Größe × 2");
  // C1 control CSI (U+009B), a right-to-left override (U+202E), an isolate (U+2066).
  EXPECT_EQ(escape_for_message("a\xc2\x9b" "2Jb"), "a\\xc2\\x9b2Jb");
  EXPECT_EQ(escape_for_message("x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");
  EXPECT_EQ(escape_for_message("\xe2\x81\xa6"), "\\xe2\\x81\\xa6");
  // Malformed UTF-8: a lone continuation byte, an overlong '/', a cut sequence, a surrogate.
  EXPECT_EQ(escape_for_message("\x80"), "\\x80");
  EXPECT_EQ(escape_for_message("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(escape_for_message("\xe2\x82"), "\\xe2\\x82");
  EXPECT_EQ(escape_for_message("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

TEST(EscapeForMessage, LongTextIsCut) {
  EXPECT_EQ(escape_for_message(std::string(1000, 'a'), 10), "aaaaaaaaaa... (990 more bytes)");
  EXPECT_EQ(escape_for_message("\n\n\n\n", 4), "\\n\\n... (2 more bytes)");
  EXPECT_EQ(escape_for_message(std::string(400, 'b')), std::string(400, 'b'));
}

}  // namespace
}  // namespace zoc
