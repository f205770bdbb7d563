// Snapshot open time on a long log: builds a table with N commits (one small file each,
// checkpoints every 10 commits as Spark does) through the real commit path, then times
// Snapshot::Load. Prints one JSON line; bench/snapshot_bench.py compares it with
// deltalake.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/uuid.h"

namespace {

using namespace ampdelta;  // NOLINT: a benchmark program

arrow::Status Build(std::shared_ptr<storage::ObjectStore> store, int64_t commits) {
  auto existing = delta::Snapshot::Load(store);
  delta::Version next = existing.ok() ? (*existing)->version() + 1 : 0;
  std::shared_ptr<const delta::Snapshot> snapshot = existing.ok() ? *existing : nullptr;
  for (; next < commits; ++next) {
    delta::CommitOptions options;
    delta::Transaction txn(store, snapshot, options);
    if (!snapshot) {
      delta::Protocol protocol;
      delta::Metadata metadata;
      metadata.id = NewUuid();
      metadata.schema_string =
          R"({"type":"struct","fields":[{"name":"block_num","type":"long","nullable":true,"metadata":{}}]})";
      metadata.configuration["delta.checkpointInterval"] = "10";
      txn.SetProtocol(protocol);
      txn.SetMetadata(metadata);
    }
    delta::Add add;
    add.path = "part-" + std::to_string(next) + "-" + NewUuid() + ".parquet";
    add.size = 1000;
    add.modification_time = 1'700'000'000'000;
    add.stats = R"({"numRecords":100,"minValues":{"block_num":)" +
                std::to_string(next * 100) + R"(},"maxValues":{"block_num":)" +
                std::to_string(next * 100 + 99) + R"(},"nullCount":{"block_num":0}})";
    txn.AddFiles({add});
    txn.SetOperation("WRITE", {{"mode", "Append"}});
    ARROW_ASSIGN_OR_RAISE(auto result, txn.Commit());
    (void)result;
    // Keep the read snapshot current cheaply.
    if (!snapshot) {
      ARROW_ASSIGN_OR_RAISE(snapshot, delta::Snapshot::Load(store));
    } else {
      ARROW_ASSIGN_OR_RAISE(snapshot, snapshot->Update());
    }
  }
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  ampdelta::SelectDefaultMemoryPool();  // as the ampdelta tool does
  CLI::App app{"Time Snapshot::Load on a table with many commits"};
  std::string table;
  int64_t commits = 10'000;
  int iterations = 10;
  app.add_option("--table", table, "table directory (built if needed)")->required();
  app.add_option("--commits", commits, "commits to build")->capture_default_str();
  app.add_option("--iterations", iterations, "timed loads")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!InitializeRuntime().ok()) return 1;
  auto store = storage::LocalStore::Make(table);
  if (!store.ok()) return 1;
  arrow::Status built = Build(*store, commits);
  if (!built.ok()) {
    std::cerr << built.ToString() << std::endl;
    return 1;
  }
  std::vector<double> times;
  int64_t files = 0;
  int64_t version = 0;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto snapshot = delta::Snapshot::Load(*store);
    const auto end = std::chrono::steady_clock::now();
    if (!snapshot.ok()) {
      std::cerr << snapshot.status().ToString() << std::endl;
      return 1;
    }
    files = static_cast<int64_t>((*snapshot)->files().size());
    version = (*snapshot)->version();
    times.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(times.begin(), times.end());
  std::cout << R"({"engine":"ampdelta","version":)" << version << R"(,"files":)" << files
            << R"(,"median_ms":)" << times[times.size() / 2] << R"(,"min_ms":)"
            << times.front() << "}" << std::endl;
  return 0;
}
