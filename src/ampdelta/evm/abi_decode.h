#pragma once

/// \file abi_decode.h
/// \brief Solidity ABI decoding (the contract ABI specification's head/tail encoding)
/// into Arrow builders, the way Amp's EVM functions convert values
/// (docs/evm-functions.md).
///
/// Decoding is two steps so that a body that fails to decode leaves nothing
/// half-appended: DecodeSequence reads the whole encoding into SolValues (bounds-checked,
/// with a budget on what aliased offsets may multiply), then AppendValue converts them.

#include <string>
#include <string_view>
#include <vector>

#include <arrow/array/builder_base.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/evm/sol_type.h"

namespace ampdelta::evm {

/// \brief A decoded value: the 32-byte word of a value type, the content of `bytes` or
/// `string`, or the items of an array or tuple.
struct SolValue {
  std::string bytes;
  std::vector<SolValue> items;
};

/// \brief Decode `abi.encode(v0, v1, …)` of `types` from `data`: an error when an offset
/// or length points outside the data, or the encoding is not one of these types. Bytes
/// after the encoding are ignored, as Amp's decoder does.
arrow::Result<std::vector<SolValue>> DecodeSequence(
    const std::vector<const SolType*>& types, std::string_view data);

/// \brief Append `value`, decoded as `type`, to `builder` (made for ArrowTypeOf(type)).
/// A word whose high bits are dirty is cut to its type's width (its sign bit extended for
/// intN), never an error, as Amp's vectorized decoder cuts narrow integers; so every
/// decimal fits its precision. Invalid UTF-8 in a `string` becomes U+FFFD.
arrow::Status AppendValue(const SolType& type, const SolValue& value,
                          arrow::ArrayBuilder* builder);

/// \brief Append an indexed parameter's topic word to `builder` (made for
/// IndexedArrowTypeOf(type)): value types as AppendValue, reference types as the word.
arrow::Status AppendTopic(const SolType& type, std::string_view word,
                          arrow::ArrayBuilder* builder);

/// \brief A 256-bit big-endian word as decimal text; `is_signed` reads it as two's
/// complement.
std::string WordToDecimal(std::string_view word, bool is_signed);

}  // namespace ampdelta::evm
