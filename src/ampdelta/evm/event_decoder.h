#pragma once

/// \file event_decoder.h
/// \brief evm_decode_log over Arrow columns: a log's topics and data, decoded as an
/// event.

#include <memory>

#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/evm/signature.h"

namespace ampdelta::evm {

/// \brief What evm_decode_log returns for `event`: a struct of the indexed parameters
/// then the others, each named as the signature names it (unnamed ones ""), nullable;
/// Null when the event has no parameters.
arrow::Result<std::shared_ptr<arrow::DataType>> DecodedEventType(
    const EventSignature& event);

/// \brief Decode each row's topic1–3 (FixedSizeBinary(32)) and data (Binary) as `event`.
/// Every row is a valid struct: a null topic gives its parameter null; null data, or data
/// that is not the event's encoding, gives every non-indexed parameter null (Amp's rule:
/// a log of another contract's event with the same topic0 is not an error).
arrow::Result<std::shared_ptr<arrow::Array>> DecodeLogs(
    const EventSignature& event, const arrow::Array& topic1, const arrow::Array& topic2,
    const arrow::Array& topic3, const arrow::Array& data, arrow::MemoryPool* pool);

}  // namespace ampdelta::evm
