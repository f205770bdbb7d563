#pragma once

/// \file generated_columns.h
/// \brief Generated columns (PROTOCOL.md "Generated Columns", writer feature
/// `generatedColumns`): a column whose `delta.generationExpression` Spark records, as in
/// `day DATE GENERATED ALWAYS AS (CAST(ts AS DATE))`. Writers must keep
/// `(value <=> expression) IS TRUE` for every row: ampdelta computes the column where a
/// write leaves it out and checks the values a write gives. Expressions it evaluates: a
/// column, `CAST(x AS DATE | BIGINT | INT | SMALLINT | TINYINT)` (widening integers),
/// `TO_DATE(x)`, `DATE(x)`, `YEAR`, `MONTH`, `DAY`, `DAYOFMONTH`, `HOUR` of dates and
/// timestamps, nested; time-zone-aware timestamps in UTC. Any other expression refuses
/// writes into the table, naming the column.

#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief The generated columns of one write. Immutable; thread-safe.
class GeneratedColumns {
 public:
  /// \brief Bind the generated columns of `table_schema` for a write of data with
  /// `source_schema`. `rewrites_rows`: the source is the table's own rows, kept as they
  /// are.
  /// \return NotImplemented (unsupported feature) naming a column whose expression
  ///   ampdelta cannot evaluate
  static arrow::Result<std::shared_ptr<const GeneratedColumns>> Make(
      const std::shared_ptr<arrow::Schema>& table_schema,
      const arrow::Schema& source_schema, bool rewrites_rows);

  /// \brief Return true when the table has no generated column.
  bool empty() const { return columns_.empty(); }

  /// \brief Return `batch` in the table schema (ConformBatch) with the generated columns
  /// it lacks computed; a column the write's source gave is checked row by row; one
  /// that came otherwise (a copied row) is kept.
  /// \return Invalid naming the column, the row and both values when a given value is
  ///   not the expression's, or when a NOT NULL column computes to null
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Conform(
      const std::shared_ptr<arrow::RecordBatch>& batch) const;

  struct Expression;
  struct Column {
    int index = 0;
    std::string expression;
    std::shared_ptr<const Expression> parsed;
    bool given = false;  // by the write's source: checked, not computed
  };

  GeneratedColumns(std::shared_ptr<arrow::Schema> table_schema,
                   std::shared_ptr<arrow::Schema> relaxed, std::vector<Column> columns);

 private:
  arrow::Status Check(const Column& column, const arrow::RecordBatch& batch) const;

  std::shared_ptr<arrow::Schema> table_schema_;
  // The table schema with every generated column nullable: batches conform to it before
  // the columns they lack are computed.
  std::shared_ptr<arrow::Schema> relaxed_;
  std::vector<Column> columns_;
};

}  // namespace ampdelta::delta
