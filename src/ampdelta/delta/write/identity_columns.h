#pragma once

/// \file identity_columns.h
/// \brief Identity columns (PROTOCOL.md "Identity Columns", writer feature
/// `identityColumns`): `BIGINT GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY` columns as
/// Spark records them in the schema (`delta.identity.start`, `.step`, `.highWaterMark`,
/// `.allowExplicitInsert`). A write that does not provide such a column gets values
/// `start + k * step` beyond the high-water mark, and its commit records the new mark in
/// the schema — so two writers that read the same mark conflict on the metadata, and
/// one of them starts over from the other's mark, as Spark's writers do.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief One identity column of a table schema.
struct IdentityColumn {
  std::string name;
  int64_t start = 1;
  int64_t step = 1;
  std::optional<int64_t> high_water_mark;
  /// BY DEFAULT (true): a write may provide the values; ALWAYS (false): it may not.
  bool allow_explicit_insert = false;
};

/// \brief The identity columns of `schema` (top-level fields carrying
/// `delta.identity.start`).
/// \return NotImplemented (unsupported feature) naming a column whose identity metadata
///   ampdelta cannot honour: not a long, a step of 0, or a value that is not a number
arrow::Result<std::vector<IdentityColumn>> IdentityColumnsOf(const arrow::Schema& schema);

/// \brief Return `schema` with each identity column's high-water mark the further of its
/// own and `kept`'s (a restore keeps values handed out since, as Spark's RESTORE does).
arrow::Result<std::shared_ptr<arrow::Schema>> KeepHighWaterMarks(
    const std::shared_ptr<arrow::Schema>& schema, const arrow::Schema& kept);

/// \brief The identity values of one write. Thread-compatible.
class IdentityAssigner {
 public:
  /// \brief Identity columns of `table_schema` that data with `source_schema` leaves
  /// out get values. `rewrites_rows`: the source is the table's own rows (a rewrite),
  /// whose values are kept.
  /// \return InvalidInput naming an ALWAYS column the source provides; NotImplemented as
  ///   IdentityColumnsOf
  static arrow::Result<IdentityAssigner> Make(const arrow::Schema& table_schema,
                                              const arrow::Schema& source_schema,
                                              bool rewrites_rows);

  /// \brief Return true when this write generates values for some column.
  bool generates() const { return !generators_.empty(); }

  /// \brief Return `batch` with a column of new values appended for each generated
  /// identity column it lacks (a batch that has the column, a copied row, keeps it).
  /// \return Invalid when the values would overflow a long (nothing is handed out)
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Fill(
      const std::shared_ptr<arrow::RecordBatch>& batch);

  /// \brief Return the names of the columns this write generates.
  std::vector<std::string> generated_columns() const;

  /// \brief Return true when any value was handed out.
  bool assigned() const;

  /// \brief Return `table_schema` with the high-water mark of each column that was
  /// given values set to the last value handed out.
  arrow::Result<std::shared_ptr<arrow::Schema>> AdvanceHighWaterMarks(
      const std::shared_ptr<arrow::Schema>& table_schema) const;

 private:
  struct Generator {
    IdentityColumn column;
    // The next value to hand out (unset: the sequence ran past a long).
    std::optional<int64_t> next;
    std::optional<int64_t> last;
  };
  std::vector<Generator> generators_;
};

}  // namespace ampdelta::delta
