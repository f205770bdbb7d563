// Checkpoint write and snapshot open on tables with many active files (driven by
// bench/checkpoint_bench.py, which runs deltalake on the same tables). One action per
// process, so the driver measures each one's peak RSS:
//
//   checkpoint_scale build --table DIR --files 1000000 [--files-per-commit 10000]
//       commits that many `add` actions (with Delta statistics, as a load writes them)
//       and no checkpoint;
//   checkpoint_scale checkpoint --table DIR
//       loads the latest snapshot, then writes its checkpoint (timed apart);
//   checkpoint_scale open --table DIR [--iterations 3]
//       times Snapshot::Load (from the newest checkpoint).
//
// Prints one JSON object on stdout.

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/uuid.h"

namespace {

using namespace ampdelta;  // NOLINT: a benchmark program
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

arrow::Status Build(std::shared_ptr<storage::ObjectStore> store, int64_t files,
                    int64_t per_commit, nlohmann::json* out) {
  std::shared_ptr<const delta::Snapshot> snapshot;
  int64_t written = 0;
  const auto start = Clock::now();
  while (written < files) {
    delta::Transaction txn(store, snapshot, delta::CommitOptions{});
    if (!snapshot) {
      delta::Metadata metadata;
      metadata.id = NewUuid();
      metadata.schema_string =
          R"({"type":"struct","fields":[{"name":"block_num","type":"long","nullable":true,"metadata":{}},)"
          R"({"name":"tx_hash","type":"binary","nullable":true,"metadata":{}}]})";
      // Checkpoints are written by the `checkpoint` step only.
      metadata.configuration["delta.checkpointInterval"] = "1000000000";
      txn.SetProtocol(delta::Protocol{});
      txn.SetMetadata(metadata);
    }
    std::vector<delta::Add> adds;
    const int64_t batch = std::min(per_commit, files - written);
    adds.reserve(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t n = written + i;
      delta::Add add;
      add.path = "part-" + std::to_string(n) + "-" + NewUuid() + "-c000.snappy.parquet";
      add.size = 100'000'000 + n % 1000;
      add.modification_time = 1'700'000'000'000 + n;
      add.data_change = true;
      add.stats = R"({"numRecords":1000000,"minValues":{"block_num":)" +
                  std::to_string(n * 10'000) + R"(},"maxValues":{"block_num":)" +
                  std::to_string(n * 10'000 + 9'999) +
                  R"(},"nullCount":{"block_num":0,"tx_hash":0}})";
      adds.push_back(std::move(add));
    }
    txn.AddFiles(std::move(adds));
    txn.SetOperation("WRITE", {{"mode", "Append"}});
    ARROW_RETURN_NOT_OK(txn.Commit().status());
    written += batch;
    if (!snapshot) {
      ARROW_ASSIGN_OR_RAISE(snapshot, delta::Snapshot::Load(store));
    } else {
      ARROW_ASSIGN_OR_RAISE(snapshot, snapshot->Update());
    }
  }
  *out = {{"files", written},
          {"version", snapshot->version()},
          {"build_seconds", SecondsSince(start)}};
  return arrow::Status::OK();
}

arrow::Status Checkpoint(std::shared_ptr<storage::ObjectStore> store,
                         nlohmann::json* out) {
  const auto start = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  const double load = SecondsSince(start);
  const auto written = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto info, delta::WriteCheckpoint(*snapshot, NowMs()));
  *out = {{"version", info.version},
          {"files", info.num_add_files},
          {"load_seconds", load},
          {"checkpoint_seconds", SecondsSince(written)},
          {"checkpoint_bytes", info.size_in_bytes}};
  return arrow::Status::OK();
}

arrow::Status Open(std::shared_ptr<storage::ObjectStore> store, int iterations,
                   nlohmann::json* out) {
  std::vector<double> seconds;
  int64_t files = 0;
  delta::Version version = 0;
  for (int i = 0; i < std::max(iterations, 1); ++i) {
    const auto start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
    seconds.push_back(SecondsSince(start));
    files = static_cast<int64_t>(snapshot->files().size());
    version = snapshot->version();
  }
  std::sort(seconds.begin(), seconds.end());
  *out = {{"version", version},
          {"files", files},
          {"open_seconds_median", seconds[seconds.size() / 2]}};
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  ampdelta::SelectDefaultMemoryPool();  // as the ampdelta tool does
  CLI::App app{"Checkpoint write and snapshot open on tables with many files"};
  app.require_subcommand(1);
  std::string table;
  int64_t files = 1'000'000;
  int64_t per_commit = 10'000;
  int iterations = 3;
  auto* build = app.add_subcommand("build", "commit --files add actions");
  build->add_option("--table", table)->required();
  build->add_option("--files", files)->capture_default_str();
  build->add_option("--files-per-commit", per_commit)->capture_default_str();
  auto* checkpoint =
      app.add_subcommand("checkpoint", "write a checkpoint of the latest version");
  checkpoint->add_option("--table", table)->required();
  auto* open = app.add_subcommand("open", "time Snapshot::Load");
  open->add_option("--table", table)->required();
  open->add_option("--iterations", iterations)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!InitializeRuntime().ok()) return 1;
  auto store = storage::LocalStore::Make(table);
  nlohmann::json out;
  arrow::Status status = store.status();
  if (status.ok()) {
    if (build->parsed()) {
      status = Build(*store, files, std::max<int64_t>(per_commit, 1), &out);
    } else if (checkpoint->parsed()) {
      status = Checkpoint(*store, &out);
    } else {
      status = Open(*store, iterations, &out);
    }
  }
  if (!status.ok()) {
    std::cerr << "checkpoint_scale: " << status.ToString() << "\n";
    return 1;
  }
  std::cout << out.dump() << "\n";
  return 0;
}
