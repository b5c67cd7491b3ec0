// SHA-256 through OpenSSL's EVP interface (sha256.h says why it is needed).
#include "compiler/support/sha256.h"

#include <openssl/evp.h>

#include <new>

namespace zoc {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  ctx_->md = EVP_MD_CTX_new();
  // Failing here means OpenSSL could not allocate a context: out of memory, as main reports.
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) {
    throw std::bad_alloc();
  }
}

Sha256::~Sha256() = default;

void Sha256::update(std::string_view data) {
  if (!data.empty()) (void)EVP_DigestUpdate(ctx_->md, data.data(), data.size());
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  (void)EVP_DigestFinal_ex(ctx_->md, digest, &length);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

}  // namespace zoc
