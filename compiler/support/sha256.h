// SHA-256 content hashes, through OpenSSL's libcrypto (EVP), for hashes that stand as proof.
//
// The output folder's stamp records what zoc wrote in each file, and zoc later replaces or
// deletes a file only if it still holds exactly that: a hash an edited file can match by
// accident, or a copied stamp by design, would make zoc delete the user's work. SHA-256 from a
// maintained library rather than our own: this is a small wrapper.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace zoc {

// The digest of `data` as 64 lowercase hexadecimal digits.
std::string sha256_hex(std::string_view data);

// The same, fed in pieces (for files read in chunks).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  std::string hex();  // finishes the digest; the object is spent after this

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

}  // namespace zoc
