#pragma once

/// \file wide_integers.h
/// \brief Integers wider than Delta's types — decimals of more than 38 digits (Amp's
/// Decimal256(76, 0)) and uint64 — converted to the type their table column has: decimal
/// text or decimal(38, s); decimal(20, 0) or long (WideIntegers and Unsigned64 in
/// schema.h say which a new column gets).

#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Whether `type` holds a decimal of more than 38 digits or a uint64, at any
/// depth.
bool HasWideInteger(const arrow::DataType& type);

/// \brief Return `column` with every decimal of more than 38 digits and every uint64
/// (inside structs and lists too) converted to the type the table's `target` has at that
/// place: a wide decimal to `string` (its decimal text) or `decimal(p, s)`; a uint64 to
/// `decimal(p, s)` or an integer type. Where `target` has another type the values are
/// left as they are, for the caller's type check to refuse.
/// \return Invalid naming the column, the value and the row when a value does not fit
///   the table's type
arrow::Result<std::shared_ptr<arrow::Array>> NarrowWideIntegers(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target);

}  // namespace ampdelta::delta
