// Commit latency of small appends to one table at any store URI (driven by
// bench/cloud_bench.py): each commit writes a one-row data file and commits it, timed
// from opening the write to the commit's return, in-process (no process start-up).
//
//   commit_latency --table s3://bucket/t --commits 50 [--storage-option KEY=VALUE ...]
//
// Prints one JSON object on stdout: median and p90 milliseconds, and the versions
// reached.

#include <algorithm>
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <arrow/api.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(fraction * static_cast<double>(values.size() - 1))];
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> OneRow(int64_t value) {
  arrow::Int64Builder block;
  ARROW_RETURN_NOT_OK(block.Append(value));
  arrow::StringBuilder hash;
  ARROW_RETURN_NOT_OK(hash.Append("0x" + std::to_string(value)));
  ARROW_ASSIGN_OR_RAISE(auto block_array, block.Finish());
  ARROW_ASSIGN_OR_RAISE(auto hash_array, hash.Finish());
  auto schema = arrow::schema(
      {arrow::field("block_num", arrow::int64()), arrow::field("hash", arrow::utf8())});
  return arrow::RecordBatch::Make(schema, 1, {block_array, hash_array});
}

arrow::Status Run(const std::string& table, int commits,
                  const std::map<std::string, std::string>& options,
                  nlohmann::json* out) {
  ARROW_RETURN_NOT_OK(ampdelta::InitializeRuntime());
  ARROW_ASSIGN_OR_RAISE(auto store, ampdelta::storage::OpenObjectStore(table, options));
  std::vector<double> millis;
  int64_t version = -1;
  for (int i = 0; i < commits; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto batch, OneRow(i));
    const auto start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto writer,
                          ampdelta::delta::TableWriter::Open(store, batch->schema(), {}));
    ARROW_RETURN_NOT_OK(writer->Write(batch));
    ARROW_ASSIGN_OR_RAISE(auto result, writer->Commit());
    millis.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    version = result.commit.version;
  }
  // The first commit creates the table; latency is the steady state.
  if (millis.size() > 1) millis.erase(millis.begin());
  *out = {{"table", table},
          {"commits", commits},
          {"last_version", version},
          {"median_ms", Percentile(millis, 0.5)},
          {"p90_ms", Percentile(millis, 0.9)}};
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  ampdelta::SelectDefaultMemoryPool();  // as the ampdelta tool does
  CLI::App app{"Commit latency of one-row appends at a table URI"};
  std::string table;
  int commits = 50;
  std::vector<std::string> entries;
  app.add_option("--table", table, "table URI")->required();
  app.add_option("--commits", commits, "commits to time");
  app.add_option("--storage-option", entries, "KEY=VALUE");
  CLI11_PARSE(app, argc, argv);
  std::map<std::string, std::string> options;
  for (const auto& entry : entries) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos) {
      std::cerr << "commit_latency: --storage-option must be KEY=VALUE" << std::endl;
      return 2;
    }
    options[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  nlohmann::json out;
  arrow::Status status = Run(table, commits, options, &out);
  if (!status.ok()) {
    std::cerr << "commit_latency: " << status.ToString() << std::endl;
    return 1;
  }
  std::cout << out.dump() << std::endl;
  return 0;
}
