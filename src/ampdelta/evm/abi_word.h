#pragma once

/// \file abi_word.h
/// \brief The ABI's 32-byte word and its 256-bit number, shared by encoding and decoding
/// (abi_encode.cc, abi_decode.cc) so that each is defined once for the module.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ampdelta::evm {

/// \brief Bytes in an ABI word (every head slot, every padded value).
inline constexpr size_t kAbiWordBytes = 32;

/// \brief A 256-bit two's complement number, least significant limb first.
using Limbs = std::array<uint64_t, 4>;

/// \brief The big-endian word of `limbs`.
inline std::string WordOf(const Limbs& limbs) {
  std::string word(kAbiWordBytes, '\0');
  for (size_t limb = 0; limb < 4; ++limb) {
    for (size_t byte = 0; byte < 8; ++byte) {
      word[kAbiWordBytes - 1 - 8 * limb - byte] =
          static_cast<char>(limbs[limb] >> (8 * byte));
    }
  }
  return word;
}

/// \brief The low `bytes` bytes of a big-endian word (or any shorter string) as an
/// unsigned number.
inline uint64_t LowBytes(std::string_view word, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = word.size() - bytes; i < word.size(); ++i) {
    value = (value << 8) | static_cast<uint8_t>(word[i]);
  }
  return value;
}

/// \brief The limbs of a 32-byte big-endian word (WordOf's inverse).
inline Limbs LimbsOf(std::string_view word) {
  Limbs limbs{};
  for (size_t limb = 0; limb < 4; ++limb) {
    limbs[limb] = LowBytes(word.substr(0, kAbiWordBytes - 8 * limb), 8);
  }
  return limbs;
}

}  // namespace ampdelta::evm
