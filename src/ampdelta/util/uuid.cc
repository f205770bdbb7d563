#include "ampdelta/util/uuid.h"

#include <cstdint>
#include <random>

#include "ampdelta/util/hex.h"

namespace ampdelta {

std::string NewUuid() {
  // One generator per thread, seeded from the OS: names from concurrent writers (threads
  // or processes) must not collide.
  thread_local std::mt19937_64 engine([] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }());
  uint64_t words[2] = {engine(), engine()};
  auto* bytes = reinterpret_cast<unsigned char*>(words);
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  const std::string hex =
      ToHex(std::string_view(reinterpret_cast<const char*>(bytes), 16));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

}  // namespace ampdelta
