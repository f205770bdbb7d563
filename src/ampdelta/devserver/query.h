#pragma once

/// \file query.h
/// \brief Bind a parsed SELECT to a dataset table and evaluate it batch by batch.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/compute/api.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/devserver/dataset.h"
#include "ampdelta/devserver/expression.h"
#include "ampdelta/devserver/sql.h"

namespace ampdelta::devserver {

/// \brief The datasets a server knows, by name.
class Catalog {
 public:
  /// \brief Register a dataset under its name().
  void Add(std::shared_ptr<Dataset> dataset);
  /// \brief Resolve a name as written in SQL: exact, without an `@version` suffix, or
  /// without the `namespace/` prefix when that is unambiguous.
  arrow::Result<std::shared_ptr<Dataset>> Find(const std::string& name) const;
  /// \brief Return every dataset.
  const std::map<std::string, std::shared_ptr<Dataset>>& datasets() const {
    return datasets_;
  }

 private:
  std::map<std::string, std::shared_ptr<Dataset>> datasets_;
};

/// \brief A query bound to one dataset table, ready to evaluate. Immutable.
class BoundQuery {
 public:
  /// \brief Resolve tables and columns, type the literals, compute the output schema.
  /// \return Invalid("invalid query: …") naming an unknown table/column or a bad literal
  static arrow::Result<std::shared_ptr<const BoundQuery>> Bind(
      const sql::SelectStatement& statement, const Catalog& catalog);

  /// \brief Return the result schema.
  const std::shared_ptr<arrow::Schema>& output_schema() const { return output_schema_; }
  /// \brief Return the dataset scanned.
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  /// \brief Return the table scanned.
  const std::string& table() const { return table_; }
  /// \brief Return true when the SQL has `SETTINGS stream = true`.
  bool streaming_setting() const { return streaming_setting_; }
  /// \brief Return the LIMIT of the outermost query.
  std::optional<uint64_t> limit() const { return limit_; }
  /// \brief Return true when the outermost select list aggregates every row into one
  /// (no GROUP BY): an Aggregator computes it.
  bool is_aggregate() const { return !aggregates_.empty() && !grouping_; }
  /// \brief Return true when the outermost query groups rows (GROUP BY, DISTINCT,
  /// DISTINCT ON): Group() computes its result from every transformed row of a scan, or
  /// of one microbatch when streaming.
  bool is_grouped() const { return grouping_.has_value(); }
  /// \brief Return the operation that makes the query non-incremental ("Aggregate",
  /// "Distinct", "Limit"), if any: such queries cannot stream. As in ampd, aggregates and
  /// DISTINCT ON whose first key is `_block_num` stream (microbatches never share a
  /// block).
  std::optional<std::string> NonIncrementalOperation() const;

  /// \brief Return the inclusive block range the filters on the source's block number
  /// (`block_num`, `_block_num`, through every stage that passes it on) allow, or nullopt
  /// when they do not bound it: a batch scan reads only those blocks, as ampd prunes
  /// segments by block range.
  arrow::Result<std::optional<std::pair<uint64_t, uint64_t>>> BlockBounds() const;

  /// \brief Group transformed batches into result rows (for is_grouped() queries).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Group(
      const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) const;

  /// \brief Apply every filter and projection to a batch of source rows. For aggregate
  /// queries the result feeds an Aggregator instead of being the output.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Transform(
      const std::shared_ptr<arrow::RecordBatch>& source) const;

  /// \brief Running MIN/MAX/COUNT over transformed batches, in bounded memory.
  class Aggregator {
   public:
    explicit Aggregator(const BoundQuery* query) : query_(query) {}
    /// \brief Fold one transformed batch into the running result.
    arrow::Status Consume(const std::shared_ptr<arrow::RecordBatch>& batch);
    /// \brief Return the one-row result.
    arrow::Result<std::shared_ptr<arrow::RecordBatch>> Finish() const;

   private:
    const BoundQuery* query_;
    int64_t rows_ = 0;
    std::vector<int64_t> non_null_;
    std::vector<std::vector<std::shared_ptr<arrow::Scalar>>> partials_;
  };

 private:
  struct Predicate {
    int column = -1;
    std::string function;  // "equal", "less", …
    std::shared_ptr<arrow::Scalar> value;
  };
  // One output column of a stage: an input column passed on, or an expression's result.
  struct StageColumn {
    int input = -1;
    std::shared_ptr<const BoundExpression> computed;  // when input < 0
  };
  struct Stage {
    std::vector<Predicate> filters;  // on the stage's input
    std::vector<StageColumn> columns;
    std::shared_ptr<arrow::Schema> output;
    // Pass every input column on (grouping and aggregation happen after the stage).
    void PassEveryColumn(const std::shared_ptr<arrow::Schema>& input);
  };
  struct Aggregate {
    sql::AggregateFn function;
    int column = -1;  // -1 for COUNT(*)
  };
  // One result column of a grouped query: a column of the last stage's output, or an
  // aggregate (an index into aggregates_).
  struct GroupOutput {
    int column = -1;
    int aggregate = -1;
  };
  struct Grouping {
    bool first_row_per_key =
        false;  // DISTINCT ON; else GROUP BY (DISTINCT: every column)
    bool distinct_all = false;
    std::vector<int> keys;  // columns of the last stage's output
    std::vector<GroupOutput> outputs;
    bool first_key_is_block_num = false;
  };

  // Bind an aggregate item: append it to aggregates_ and return its result field.
  static arrow::Result<std::shared_ptr<arrow::Field>> BindAggregate(
      const sql::SelectItem& item, const arrow::Schema& input,
      const std::string& source_name, BoundQuery* query);
  // Type a comparison's right side as its column: a literal, or a call of literals.
  static arrow::Result<std::shared_ptr<arrow::Scalar>> ComparisonValue(
      const sql::Comparison& comparison, const arrow::Field& column);
  static arrow::Status BindGrouping(const sql::SelectStatement& statement,
                                    const std::shared_ptr<arrow::Schema>& input,
                                    const std::string& source_name, BoundQuery* query);
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> GroupByKeys(
      const std::shared_ptr<arrow::RecordBatch>& rows) const;
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> FirstRowPerKey(
      const std::shared_ptr<arrow::RecordBatch>& rows) const;

  static arrow::Status BindStage(const sql::SelectStatement& statement,
                                 const std::shared_ptr<arrow::Schema>& input,
                                 const std::string& source_name, BoundQuery* query);

  std::shared_ptr<Dataset> dataset_;
  std::string table_;
  bool streaming_setting_ = false;
  std::optional<uint64_t> limit_;
  std::vector<Stage> stages_;
  std::vector<Aggregate> aggregates_;
  std::optional<Grouping> grouping_;
  std::shared_ptr<arrow::Schema> output_schema_;
};

}  // namespace ampdelta::devserver
