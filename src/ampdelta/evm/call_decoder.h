#pragma once

/// \file call_decoder.h
/// \brief evm_decode_type and evm_decode_params over Arrow columns: ABI-encoded values
/// and function calldata, decoded the way Amp's functions do (docs/evm-functions.md).

#include <memory>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/evm/signature.h"
#include "ampdelta/evm/sol_type.h"

namespace ampdelta::evm {

/// \brief evm_decode_type: each row of `data` (Binary) read as `abi.encode(value)` of
/// `type`, an array of ArrowTypeOf(type). A null row, or one that is not such an
/// encoding, gives null.
arrow::Result<std::shared_ptr<arrow::Array>> DecodeValues(const SolType& type,
                                                          const arrow::Array& data,
                                                          arrow::MemoryPool* pool);

/// \brief What evm_decode_params returns for `function`: a struct of its inputs, each
/// named as the signature names it.
/// \return Invalid when an input has no name (Amp requires one)
arrow::Result<std::shared_ptr<arrow::DataType>> FunctionParamsType(
    const FunctionSignature& function);

/// \brief evm_decode_params: each row of `data` (Binary) read as a call of `function`.
/// A null row, one shorter than a selector, one with another function's selector or
/// inputs that do not decode gives a null struct.
arrow::Result<std::shared_ptr<arrow::Array>> DecodeCalls(
    const FunctionSignature& function, const arrow::Array& data, arrow::MemoryPool* pool);

}  // namespace ampdelta::evm
