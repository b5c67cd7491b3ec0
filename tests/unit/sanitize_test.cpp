// Tests of the sanitizers (compiler/support/sanitize.h) and of what Diagnostic::render makes of
// hostile text: a model file's strings reach the terminal only escaped (issue 31).
#include <gtest/gtest.h>

#include "compiler/support/diagnostics.h"
#include "compiler/support/sanitize.h"

namespace zoc {
namespace {

TEST(ShownText, KeepsPrintableTextAndUtf8) {
  EXPECT_EQ(shown_text("layer1.0.conv1"), "layer1.0.conv1");
  EXPECT_EQ(shown_text("it's \"quoted\""), "it's \"quoted\"");
  EXPECT_EQ(shown_text("卷积层/ñ"), "卷积层/ñ");  // names in any script read as written
}

TEST(ShownText, EscapesControlsAndBackslashes) {
  EXPECT_EQ(shown_text("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(shown_text("a\nb\rc\td"), "a\\x0ab\\x0dc\\x09d");
  EXPECT_EQ(shown_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(shown_text("a\x7f"), "a\\x7f");
  // The escape of a real backslash cannot be mistaken for one zoc wrote.
  EXPECT_EQ(shown_text("a\\x1b"), "a\\\\x1b");
}

TEST(ShownText, EscapesWhatATerminalActsOnOrHides) {
  EXPECT_EQ(shown_text("\xc2\x9b"
                       "31m"),
            "\\xc2\\x9b31m");  // U+009B, the 8-bit CSI
  EXPECT_EQ(shown_text("a\xe2\x80\xae"
                       "b"),
            "a\\xe2\\x80\\xaeb");  // U+202E right-to-left override
  EXPECT_EQ(shown_text("a\xe2\x81\xa6"
                       "b"),
            "a\\xe2\\x81\\xa6b");  // U+2066 isolate
  EXPECT_EQ(shown_text("a\xe2\x80\x8b"
                       "b"),
            "a\\xe2\\x80\\x8bb");  // U+200B zero width space
  EXPECT_EQ(shown_text("\xef\xbb\xbf"
                       "a"),
            "\\xef\\xbb\\xbfa");  // byte-order mark
  EXPECT_EQ(shown_text("a\xe2\x80\xa8"
                       "b"),
            "a\\xe2\\x80\\xa8b");  // U+2028 line separator
}

TEST(ShownText, EscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(shown_text("a\xff"
                       "b"),
            "a\\xffb");
  EXPECT_EQ(shown_text("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(shown_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(shown_text("\xe5\x8d"), "\\xe5\\x8d");           // cut short
}

TEST(ShownText, CutsLongText) {
  const std::string long_name(kMaxShownBytes + 50, 'x');
  EXPECT_EQ(shown_text(long_name), std::string(kMaxShownBytes, 'x') + "...");
  EXPECT_EQ(shown_text("abcdef", 3), "abc...");
  EXPECT_EQ(shown_text(long_name, std::string::npos), long_name);
}

TEST(TerminalSafe, KeepsListContinuationsOnly) {
  EXPECT_EQ(terminal_safe("2 unsupported nodes\n  node 'a'\n  node 'b'", true),
            "2 unsupported nodes\n  node 'a'\n  node 'b'");
  EXPECT_EQ(terminal_safe("x\nfile.yaml:1:1: error: forged", true),
            "x\\x0afile.yaml:1:1: error: forged");
  EXPECT_EQ(terminal_safe("x\n  y", false), "x\\x0a  y");
  // Text that went through shown_text is left as it is.
  EXPECT_EQ(terminal_safe(shown_text("a\\b\x1b"), true), shown_text("a\\b\x1b"));
}

TEST(DiagnosticRender, NeverPrintsRawControls) {
  Diagnostics d;
  d.error(SourceLoc{"model\x1b]0;title\x07.yaml", 3, 4}, "layer 'a\nb.yaml:1:1: error: x'\x1b[2J");
  EXPECT_EQ(d.render(),
            "model\\x1b]0;title\\x07.yaml:3:4: error: "
            "layer 'a\\x0ab.yaml:1:1: error: x'\\x1b[2J\n");
}

}  // namespace
}  // namespace zoc
