#pragma once

/// \file sha256.h
/// \brief SHA-256 (FIPS 180-4) and HMAC-SHA256, for the Python SDK's `_amp_batch_id` and
/// for signing cloud storage requests.
///
/// Computed by Nettle (GnuTLS's crypto library), not OpenSSL: the Arrow SDK's libparquet
/// exports its own bundled OpenSSL symbols, and linking Debian's libcrypto beside it
/// would let one library's calls resolve into the other's copy.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ampdelta {

/// \brief Return the SHA-256 digest of `data`.
std::array<uint8_t, 32> Sha256(std::string_view data);

/// \brief Return the SHA-256 digest of `data` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view data);

/// \brief Return HMAC-SHA256 (RFC 2104) of `message` under `key` (cloud request signing).
std::array<uint8_t, 32> HmacSha256(std::string_view key, std::string_view message);

}  // namespace ampdelta
