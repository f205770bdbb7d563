#pragma once

/// \file abi_encode.h
/// \brief Solidity ABI encoding of Arrow values, the way Amp's evm_encode_type and
/// evm_encode_params convert them (docs/evm-functions.md): each Arrow type stands for a
/// fixed set of Solidity types (Int64 for intN only, UInt64 for uintN only, Decimal with
/// scale ≤ 0 for either, Utf8 for string, …), and a value out of the type's range is an
/// error naming both.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/evm/abi_decode.h"
#include "ampdelta/evm/signature.h"
#include "ampdelta/evm/sol_type.h"

namespace ampdelta::evm {

/// \brief The value in `row` of `array` as a value of `type` (a null row reads the slot
/// under it, as Amp does).
/// \return Invalid with Amp's wording when the Arrow type cannot stand for `type` or the
///   value is out of its range
arrow::Result<SolValue> ToSolValue(const SolType& type, const arrow::Array& array,
                                   int64_t row);

/// \brief `abi.encode(v0, v1, …)`: the head/tail encoding of a tuple of `types`.
std::string EncodeSequence(const std::vector<const SolType*>& types,
                           const std::vector<SolValue>& values);

/// \brief evm_encode_type: each row of `values` as `abi.encode(value)`, a Binary array.
arrow::Result<std::shared_ptr<arrow::Array>> EncodeValues(const SolType& type,
                                                          const arrow::Array& values,
                                                          arrow::MemoryPool* pool);

/// \brief evm_encode_params: each of `rows` rows' arguments as the function's calldata
/// (its selector, then `abi.encode` of the inputs), a Binary array. `arguments` hold one
/// array of `rows` values per input (none for a function without inputs).
arrow::Result<std::shared_ptr<arrow::Array>> EncodeCalls(
    const FunctionSignature& function,
    const std::vector<std::shared_ptr<arrow::Array>>& arguments, int64_t rows,
    arrow::MemoryPool* pool);

}  // namespace ampdelta::evm
