#pragma once

/// \file wide_integers.h
/// \brief Integers wider than Delta's decimal(38) (Amp's Decimal256(76, 0)) converted to
/// the type their table column has: decimal text or decimal(38, s) (WideIntegers in
/// schema.h says which a new column gets).

#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Whether `type` holds a decimal of more than 38 digits, at any depth.
bool HasWideDecimal(const arrow::DataType& type);

/// \brief Return `column` with every decimal of more than 38 digits (inside structs and
/// lists too) converted to the type the table's `target` has at that place: `string`
/// (its decimal text) or `decimal(p, s)`. Where `target` has another type the values are
/// left as they are, for the caller's type check to refuse.
/// \return Invalid naming the column, the value and the row when a value has more digits
///   than the table's decimal holds
arrow::Result<std::shared_ptr<arrow::Array>> NarrowWideDecimals(
    const std::string& name, const std::shared_ptr<arrow::Array>& column,
    const std::shared_ptr<arrow::DataType>& target);

}  // namespace ampdelta::delta
