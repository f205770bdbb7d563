#pragma once

/// \file keccak.h
/// \brief Keccak-256 as Ethereum uses it: event topics, function selectors.
///
/// Not FIPS 202 SHA3-256: Ethereum kept the original Keccak padding (a 0x01 domain byte
/// where SHA3 has 0x06), so the digests differ for every input. Nettle, which we already
/// link, has only SHA3-256; its Keccak-f[1600] permutation is public, and the sponge is
/// built on it.

#include <array>
#include <cstdint>
#include <string_view>

namespace ampdelta {

/// \brief Return the Keccak-256 digest of `data` (keccak256 in Solidity).
std::array<uint8_t, 32> Keccak256(std::string_view data);

}  // namespace ampdelta
