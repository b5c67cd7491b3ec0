// SHA-256 (FIPS 180-4), for content hashes that stand as proof.
//
// The output folder's stamp records what zoc wrote in each file, and zoc later replaces or
// deletes a file only if it still holds exactly that: a hash an edited file can match by
// accident, or a copied stamp by design, would make zoc delete the user's work. No library zoc
// already links offers SHA-256, so here are its hundred lines.
#pragma once

#include <string>
#include <string_view>

namespace zoc {

// The digest of `data` as 64 lowercase hexadecimal digits.
std::string sha256_hex(std::string_view data);

// The same, fed in pieces (for files read in chunks).
class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::string hex();  // finishes the digest; the object is spent after this

 private:
  void block(const unsigned char* p);

  unsigned int h_[8];
  unsigned char buf_[64];
  size_t buffered_ = 0;
  unsigned long long length_ = 0;  // bytes fed so far
};

}  // namespace zoc
