// SHA-256 against FIPS 180-4's examples: the stamp's hashes must be the ones `sha256sum` prints,
// so that a user can check a file against its stamp line by hand.
#include <gtest/gtest.h>

#include <string>

#include "compiler/support/sha256.h"

namespace zoc {
namespace {

TEST(Sha256, MatchesTheStandardsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesGiveTheWholesDigest) {
  const std::string text(1000, 'x');
  for (size_t cut : {0, 1, 55, 63, 64, 65, 999}) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, cut));
    h.update(std::string_view(text).substr(cut));
    EXPECT_EQ(h.hex(), sha256_hex(text)) << cut;
  }
}

}  // namespace
}  // namespace zoc
