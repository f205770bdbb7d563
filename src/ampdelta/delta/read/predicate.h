#pragma once

/// \file predicate.h
/// \brief Row predicates for delete and scans (`block_num >= 100 AND network = 'eth'`):
/// evaluated exactly on rows, and conservatively on files from partition values and
/// statistics so untouched files are skipped.

#include <memory>
#include <string>
#include <vector>

#include <arrow/compute/api.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

class FileStats;

/// \brief What a predicate can say about a whole file.
enum class FileMatch : uint8_t {
  /// No row of the file can match.
  kNone,
  /// Every row of the file matches.
  kAll,
  /// Some rows may match: the file must be read.
  kSome,
};

/// \brief A boolean condition on a table's columns, bound to its schema. Immutable.
class Predicate {
 public:
  /// \brief Parse a condition and bind it to `schema`: comparisons of a column with a
  /// literal (`= != <> < <= > >=`, either side), `[NOT] BETWEEN a AND b`, `IS [NOT]
  /// NULL`,
  /// `[NOT] IN (a, b, …)`, joined by AND, OR, NOT and parentheses, as Spark writes CHECK
  /// constraints (`( x BETWEEN - 5 AND 5 ) OR x IS NULL`). Literals: numbers (a `-` may
  /// stand apart: `- 5`), 'strings', true/false; a number wider than its column's type is
  /// compared in the wider type, as Spark widens it (`n < 40000` for a SMALLINT n).
  /// Column names may be quoted with "" or ``. \return Invalid naming an unknown column,
  /// a bad literal or unsupported syntax
  static arrow::Result<Predicate> Parse(const std::string& text,
                                        const std::shared_ptr<arrow::Schema>& schema);

  /// \brief Return a boolean array: true where the row matches, false where it does not,
  /// null where a null makes the answer unknown (SQL's three values).
  arrow::Result<std::shared_ptr<arrow::Array>> EvaluateKleene(
      const arrow::RecordBatch& batch) const;

  /// \brief Return a boolean array: true where the row matches (null never matches).
  arrow::Result<std::shared_ptr<arrow::Array>> Evaluate(
      const arrow::RecordBatch& batch) const;

  /// \brief Classify a file from its partition values and statistics.
  FileMatch Classify(const Add& file,
                     const std::vector<std::string>& partition_columns) const;

  /// \brief Return the predicate as written.
  const std::string& text() const { return text_; }
  /// \brief Return the columns the predicate reads.
  std::vector<std::string> columns() const;

 private:
  class Parser;
  struct Term {
    std::string column;
    std::string key;  // of statistics and partition values: the physical name
    std::shared_ptr<arrow::DataType> type;
    std::string function;  // "equal", "less", …, "is_null", "is_valid"
    std::shared_ptr<arrow::Scalar> value;
    // False for a widened column: files written before the widening hold min/max in the
    // narrower type (a float's 0.2 is not the double 0.2), so only null counts count.
    bool trusts_min_max = true;
  };
  static Term MakeTerm(const arrow::Field& field, std::string function,
                       std::shared_ptr<arrow::Scalar> value);
  FileMatch ClassifyTerm(const Term& term, const Add& file, bool is_partition,
                         const FileStats& stats) const;

  std::string text_;
  // The whole condition, evaluated on rows (SQL's three values: and_kleene, or_kleene).
  arrow::compute::Expression expression_;
  // The comparisons ANDed at its top level, which classify files from statistics; with
  // `opaque_` some other condition (an OR, a NOT) is ANDed too: a file no term excludes
  // must be read.
  std::vector<Term> terms_;
  bool opaque_ = false;
  std::vector<std::string> columns_;
};

}  // namespace ampdelta::delta
