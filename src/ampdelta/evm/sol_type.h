#pragma once

/// \file sol_type.h
/// \brief Solidity ABI types: parsed from their text (`uint256`, `(address,bytes)[]`),
/// written back canonically (what keccak256 hashes into topics and selectors), and mapped
/// to the Arrow types Amp's EVM functions return (docs/evm-functions.md).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::evm {

/// \brief One Solidity type.
struct SolType {
  enum class Kind {
    kBool,
    kInt,   ///< int8 … int256 (`bits`)
    kUint,  ///< uint8 … uint256 (`bits`)
    kAddress,
    kFixedBytes,  ///< bytes1 … bytes32 (`size` bytes)
    kBytes,
    kString,
    kFunction,    ///< parsed, never decoded (Amp refuses it too)
    kArray,       ///< T[] (`components[0]` is T)
    kFixedArray,  ///< T[k] (`components[0]` is T, `size` is k)
    kTuple,       ///< (T0, T1, …)
  };

  Kind kind = Kind::kBool;
  int bits = 0;
  size_t size = 0;
  std::vector<SolType> components;

  /// \brief The canonical text: `uint` as `uint256`, no spaces, no names.
  std::string Canonical() const;
  /// \brief Whether the ABI encodes the value out of line (behind an offset).
  bool IsDynamic() const;
  /// \brief Bytes the value takes in its tuple's head: 32 for a dynamic value.
  size_t HeadSize() const;
  /// \brief bool, intN, uintN, address, bytesN: one 32-byte word, the same in topics.
  bool IsValueType() const;
};

/// \brief A parameter of an event or function signature.
struct SolParam {
  SolType type;
  std::string name;  ///< empty when the signature names none
  bool indexed = false;
};

/// \brief Parse a type as Solidity writes it (`uint`, `int256[3]`, `(uint256, string)[]`,
/// `tuple(address,bool)`); component names inside tuples are allowed and ignored.
arrow::Result<SolType> ParseSolType(std::string_view text);

/// \brief The Arrow type Amp gives a decoded value of `type`: UInt8–64/Int8–64 up to 64
/// bits, Decimal128(38, 0) up to 125, Decimal256(76, 0) up to 251 (so uint128 and uint160
/// too), Utf8 for 256-bit integers; FixedSizeBinary for address and bytesN; lists,
/// fixed-size lists and structs with fields c0, c1, … for arrays and tuples.
arrow::Result<std::shared_ptr<arrow::DataType>> ArrowTypeOf(const SolType& type);

/// \brief The same for an indexed event parameter: a reference type's topic is the
/// keccak256 of its encoding, so it stays the 32-byte word.
arrow::Result<std::shared_ptr<arrow::DataType>> IndexedArrowTypeOf(const SolType& type);

}  // namespace ampdelta::evm
