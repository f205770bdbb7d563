#pragma once

/// \file type_widening.h
/// \brief Type widening on schema evolution (PROTOCOL.md "Type Widening", feature
/// `typeWidening`): on a table with `delta.enableTypeWidening=true`, a write that merges
/// schemas and brings a column in a wider type widens the column, as Spark's schema
/// evolution does, and records the change in the field's `delta.typeChanges`. Files
/// written before keep their type; readers read them with the table's (scan.cc).

#include <map>
#include <memory>
#include <set>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief Return true when `configuration` has `delta.enableTypeWidening=true`.
bool TypeWideningEnabled(const std::map<std::string, std::string>& configuration);

/// \brief Return true when schema evolution widens a column of type `from` to `to`
/// without being asked twice: a wider integer, float to double, date to timestamp without
/// time zone, or a decimal whose precision, scale and integer digits all grow or stay
/// (the changes Spark applies automatically; integer to decimal or double it leaves to
/// ALTER).
bool WidensAutomatically(const arrow::DataType& from, const arrow::DataType& to);

/// \brief Return `column` widened to take data of type `data`: the column itself when it
/// widens automatically, or a struct with the same fields (same names, same order) some
/// of which widen, each recording its own change as Spark records a nested one; null when
/// `data` does not widen it.
arrow::Result<std::shared_ptr<arrow::Field>> WidenedFor(
    const std::shared_ptr<arrow::Field>& column,
    const std::shared_ptr<arrow::DataType>& data);

/// \brief Return the names (lower case) of the columns that the table's generated-column
/// expressions and CHECK constraints (`delta.constraints.*` in `configuration`) mention:
/// Spark refuses to widen those, since the expression would change type under them.
/// Every identifier counts, so a column named like a function counts too.
std::set<std::string> ColumnsExpressionsUse(
    const arrow::Schema& schema, const std::map<std::string, std::string>& configuration);

/// \brief Return true when `field` was widened (it has a `delta.typeChanges` record):
/// statistics of files written before hold the narrower type's values.
bool WasWidened(const arrow::Field& field);

/// \brief Return `field` with type `to` and the change appended to its
/// `delta.typeChanges` (`{"fromType": …, "toType": …}`, as Spark records it).
arrow::Result<std::shared_ptr<arrow::Field>> WidenField(
    const std::shared_ptr<arrow::Field>& field,
    const std::shared_ptr<arrow::DataType>& to);

/// \brief Return `schema_json` (a schemaString) with `version` as the `tableVersion` of
/// every `delta.typeChanges` record that has none: the preview feature
/// `typeWidening-preview` records the version of each change, known only as the commit
/// lands.
///
/// Errors: kCorruptLog when the schema or a record does not parse.
arrow::Result<std::string> StampTypeChangeVersions(const std::string& schema_json,
                                                   int64_t version);

}  // namespace ampdelta::delta
