#pragma once

/// \file evm_schemas.h
/// \brief Amp's Arrow schemas for the evm-rpc raw tables (amp-protocol.md §2).

#include <memory>
#include <string_view>

#include <arrow/type_fwd.h>

namespace ampdelta::devserver {

/// \brief `blocks`: 24 columns.
std::shared_ptr<arrow::Schema> BlocksSchema();
/// \brief `transactions` (evm-rpc): 27 columns.
std::shared_ptr<arrow::Schema> TransactionsSchema();
/// \brief `logs`: 13 columns.
std::shared_ptr<arrow::Schema> LogsSchema();

/// \brief Amp's timestamp type: nanoseconds with the literal time zone "+00:00".
std::shared_ptr<arrow::DataType> AmpTimestampType();
/// \brief FixedSizeBinary(32), Amp's BYTES32.
std::shared_ptr<arrow::DataType> Bytes32Type();
/// \brief FixedSizeBinary(20), Amp's ADDRESS.
std::shared_ptr<arrow::DataType> AddressType();
/// \brief Decimal128(38, 0), Amp's EVM_CURRENCY.
std::shared_ptr<arrow::DataType> CurrencyType();

}  // namespace ampdelta::devserver
