#pragma once

// Helpers for delta tests: small Arrow batches and tables written through the real path.

#include <variant>
#include <vector>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta::test_tables {

/// \brief A batch with `block_num` (uint64) in [from, to) and a `network` string column.
inline std::shared_ptr<arrow::RecordBatch> Blocks(uint64_t from, uint64_t to,
                                                  const std::string& network = "eth") {
  arrow::UInt64Builder numbers;
  arrow::StringBuilder networks;
  for (uint64_t n = from; n < to; ++n) {
    (void)numbers.Append(n);
    (void)networks.Append(network);
  }
  auto schema = arrow::schema({arrow::field("block_num", arrow::uint64(), false),
                               arrow::field("network", arrow::utf8())});
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(to - from),
                                  {*numbers.Finish(), *networks.Finish()});
}

/// \brief Write batches as one commit.
inline arrow::Result<TableWriteResult> WriteBatches(
    std::shared_ptr<storage::ObjectStore> store,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    TableWriteOptions options = {}) {
  ARROW_ASSIGN_OR_RAISE(auto writer,
                        TableWriter::Open(store, batches.front()->schema(), options));
  for (const auto& batch : batches) ARROW_RETURN_NOT_OK(writer->Write(batch));
  return writer->Commit();
}

/// \brief Return the sorted block numbers of the table's latest version (or `version`).
inline arrow::Result<std::vector<int64_t>> BlockNumbers(
    std::shared_ptr<storage::ObjectStore> store, std::optional<Version> version = {}) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot,
                        Snapshot::Load(store, SnapshotOptions{version, {}}));
  ScanOptions options;
  options.columns = {"block_num"};
  ARROW_ASSIGN_OR_RAISE(auto scan, TableScan::Make(snapshot, options));
  ARROW_ASSIGN_OR_RAISE(auto table, scan->ToTable());
  std::vector<int64_t> out;
  for (const auto& chunk : table->column(0)->chunks()) {
    const auto& values = static_cast<const arrow::Int64Array&>(*chunk);
    for (int64_t i = 0; i < values.length(); ++i) out.push_back(values.Value(i));
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// \brief Return the actions of the commit file of `version`.
inline std::vector<Action> CommitOf(storage::ObjectStore& store, Version version) {
  auto data = store.Get(CommitPath(version));
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  if (!data.ok()) return {};
  auto actions = ParseCommit((*data)->ToString(), CommitPath(version));
  EXPECT_TRUE(actions.ok()) << actions.status().ToString();
  return actions.ok() ? *actions : std::vector<Action>{};
}

/// \brief Return the actions of type T among `actions`, in order.
template <typename T>
std::vector<T> ActionsOf(const std::vector<Action>& actions) {
  std::vector<T> out;
  for (const auto& action : actions) {
    if (const auto* typed = std::get_if<T>(&action)) out.push_back(*typed);
  }
  return out;
}

inline std::vector<int64_t> Range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

}  // namespace ampdelta::delta::test_tables
