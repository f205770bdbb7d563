#include "ampdelta/util/keccak.h"

#include <cstring>

#include <nettle/sha3.h>

namespace ampdelta {
namespace {

// Keccak-256's rate: 1600 bits of state less twice the 256-bit capacity.
constexpr size_t kRate = SHA3_256_BLOCK_SIZE;  // 136 bytes, 17 lanes

uint64_t LoadLittleEndian(const uint8_t* bytes) {
  uint64_t lane = 0;
  for (int i = 7; i >= 0; --i) lane = (lane << 8) | bytes[i];
  return lane;
}

void Absorb(sha3_state* state, const uint8_t* block) {
  for (size_t lane = 0; lane < kRate / 8; ++lane) {
    state->a[lane] ^= LoadLittleEndian(block + 8 * lane);
  }
  sha3_permute(state);
}

}  // namespace

std::array<uint8_t, 32> Keccak256(std::string_view data) {
  sha3_state state;
  std::memset(&state, 0, sizeof(state));
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  size_t left = data.size();
  for (; left >= kRate; left -= kRate, bytes += kRate) Absorb(&state, bytes);
  // The last, padded block: Keccak's multi-rate padding with the 0x01 domain bit.
  uint8_t last[kRate] = {};
  if (left > 0) std::memcpy(last, bytes, left);
  last[left] ^= 0x01;
  last[kRate - 1] ^= 0x80;
  Absorb(&state, last);
  std::array<uint8_t, 32> digest{};
  for (size_t i = 0; i < digest.size(); ++i) {
    digest[i] = static_cast<uint8_t>(state.a[i / 8] >> (8 * (i % 8)));
  }
  return digest;
}

}  // namespace ampdelta
