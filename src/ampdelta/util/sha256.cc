#include "ampdelta/util/sha256.h"

#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include "ampdelta/util/hex.h"

namespace ampdelta {
namespace {

const uint8_t* Bytes(std::string_view text) {
  return reinterpret_cast<const uint8_t*>(text.data());
}

}  // namespace

std::array<uint8_t, 32> Sha256(std::string_view data) {
  sha256_ctx context;
  sha256_init(&context);
  sha256_update(&context, data.size(), Bytes(data));
  std::array<uint8_t, 32> digest{};
  sha256_digest(&context, digest.size(), digest.data());
  return digest;
}

std::string Sha256Hex(std::string_view data) {
  const auto digest = Sha256(data);
  return ToHex(
      std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::array<uint8_t, 32> HmacSha256(std::string_view key, std::string_view message) {
  hmac_sha256_ctx context;
  hmac_sha256_set_key(&context, key.size(), Bytes(key));
  hmac_sha256_update(&context, message.size(), Bytes(message));
  std::array<uint8_t, 32> mac{};
  hmac_sha256_digest(&context, mac.size(), mac.data());
  return mac;
}

}  // namespace ampdelta
