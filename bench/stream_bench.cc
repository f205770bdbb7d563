// Streaming benchmarks against the in-process dev server (driven by
// bench/stream_bench.py):
//
//   latency  commit latency of one-block live microbatches at table versions 10, 100,
//            1,000, ... up to --commits (one commit per microbatch; checkpoints every
//            --checkpoint-interval commits, default 10; with --compact, compaction every
//            100 commits as a stream does by default), the median of the --window commits
//            after each;
//   reorg    stream a large transactions table, then a 10-block reorg at the head: the
//            undo's time, files touched and rows removed; plus catch-up rows/s of the
//            stream vs a batch load of the same range.
//   undo-dv  the same table compacted into large files (as another engine's OPTIMIZE or a
//            deep compaction leaves it), then a 10-block reorg at the head, undone with
//            deletion vectors (delta.enableDeletionVectors) and without (the file holding
//            the reorged microbatch is rewritten): the undo's time and the bytes it
//            writes, the median of --rounds rounds of each, rows checked equal.
//
// Prints one JSON object on stdout.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <arrow/table.h>
#include <nlohmann/json.hpp>

#include "ampdelta/amp/client.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/runtime.h"

namespace {

using ampdelta::loader::LoadResult;
using Clock = std::chrono::steady_clock;
constexpr uint64_t kFirst = 24'000'000;

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

ampdelta::loader::DeltaLakeConfig Config(const std::string& table,
                                         bool optimize_after_write = false) {
  return *ampdelta::loader::ParseDeltaLakeConfig(
      R"({"table_path": ")" + table + R"(", "optimize_after_write": )" +
      (optimize_after_write ? "true" : "false") + "}");
}

// Bytes of the regular files under `path`.
uint64_t DiskBytes(const std::filesystem::path& path) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) bytes += entry.file_size(ec);
  }
  return bytes;
}

int Fail(const std::string& what) {
  std::cerr << "stream_bench: " << what << std::endl;
  return 1;
}

// Set table properties with a metadata-only commit (the stream's table exists by then).
arrow::Status SetProperties(const std::string& table,
                            const std::map<std::string, std::string>& properties) {
  ARROW_ASSIGN_OR_RAISE(auto store, ampdelta::storage::OpenObjectStore(table));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, ampdelta::delta::Snapshot::Load(store));
  ampdelta::delta::Metadata metadata = snapshot->metadata();
  for (const auto& [key, value] : properties) metadata.configuration[key] = value;
  ampdelta::delta::Transaction txn(store, snapshot);
  txn.SetMetadata(std::move(metadata));
  txn.SetOperation("SET TBLPROPERTIES", {});
  return txn.Commit().status();
}

int Latency(const std::string& dir, uint64_t commits, bool compact, bool keep,
            int64_t checkpoint_interval, int64_t window_commits, nlohmann::json* out) {
  ampdelta::devserver::DevServerOptions options;
  options.chain.initial_blocks = commits + 60;
  options.stream.max_microbatch_blocks = 1;
  auto server = ampdelta::devserver::DevServer::Start(options);
  if (!server.ok()) return Fail(server.status().ToString());
  auto client = ampdelta::amp::Client::Connect((*server)->url());
  if (!client.ok()) return Fail(client.status().ToString());
  const std::string table = dir + "/latency";
  std::vector<std::pair<int64_t, double>> samples;  // (version, commit ms)
  ampdelta::loader::LoadOptions load;
  load.until_block = kFirst + commits + 59;
  load.stream_commit_rows = 1;  // every one-block microbatch is a commit
  load.on_result = [&](const LoadResult& result) {
    if (result.is_reorg) return;
    samples.emplace_back(std::get<int64_t>(result.metadata.at("table_version")),
                         std::get<double>(result.metadata.at("commit_ms")));
  };
  const std::string sql =
      R"(SELECT block_num, hash, gas_used FROM "acme/eth_mainnet".blocks)";
  if (checkpoint_interval > 0) {
    // The stream's first commit creates the table; the property follows in version 1.
    ampdelta::loader::LoadOptions first = load;
    first.until_block = kFirst;
    const auto created =
        ampdelta::loader::LoadStream(**client, sql, Config(table, compact), first);
    if (!created.success) return Fail(created.error);
    auto set = SetProperties(
        table, {{"delta.checkpointInterval", std::to_string(checkpoint_interval)}});
    if (!set.ok()) return Fail(set.ToString());
  }
  const auto start = Clock::now();
  const auto result =
      ampdelta::loader::LoadStream(**client, sql, Config(table, compact), load);
  if (!result.success) return Fail(result.error);
  nlohmann::json latency;
  latency["checkpoint_interval"] = checkpoint_interval > 0 ? checkpoint_interval : 10;
  latency["optimize_after_write"] = compact;
  latency["compactions"] = result.metadata.contains("compactions")
                               ? std::get<int64_t>(result.metadata.at("compactions"))
                               : 0;
  auto snapshot =
      ampdelta::delta::Snapshot::Load(*ampdelta::storage::OpenObjectStore(table));
  if (!snapshot.ok()) return Fail(snapshot.status().ToString());
  latency["final_version"] = (*snapshot)->version();
  latency["live_files"] = (*snapshot)->files().size();
  latency["tombstones"] = (*snapshot)->tombstones().size();
  latency["log_bytes"] = DiskBytes(std::filesystem::path(table) / "_delta_log");
  latency["table_bytes"] = DiskBytes(table);
  std::vector<int64_t> windows;
  for (int64_t at = 10; at < static_cast<int64_t>(commits); at *= 10) {
    windows.push_back(at);
  }
  windows.push_back(static_cast<int64_t>(commits));
  for (int64_t at : windows) {
    std::vector<double> window;
    for (const auto& [version, ms] : samples) {
      if (version >= at && version < at + window_commits) window.push_back(ms);
    }
    latency["version_" + std::to_string(at)] = {{"median_ms", Median(window)},
                                                {"samples", window.size()}};
  }
  latency["commits"] = samples.size();
  latency["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  (*out)["latency"] = latency;
  if (!keep) std::filesystem::remove_all(table);
  return 0;
}

int Reorg(const std::string& dir, uint64_t blocks, uint32_t txs, nlohmann::json* out) {
  ampdelta::devserver::DevServerOptions options;
  options.chain.initial_blocks = blocks;
  options.chain.transactions_per_block = txs;
  auto server = ampdelta::devserver::DevServer::Start(options);
  if (!server.ok()) return Fail(server.status().ToString());
  auto client = ampdelta::amp::Client::Connect((*server)->url());
  if (!client.ok()) return Fail(client.status().ToString());
  const std::string sql = R"(SELECT * FROM "acme/eth_mainnet".transactions)";
  const std::string table = dir + "/streamed";
  const uint64_t head = kFirst + blocks - 1;

  std::mutex mutex;
  std::optional<LoadResult> reorg;
  Clock::time_point caught_up;
  bool at_head = false;
  ampdelta::loader::LoadOptions load;
  constexpr uint64_t kLiveBlocks = 20;
  uint64_t committed_to = 0;
  load.until_block = head + kLiveBlocks + 1;
  load.compression = "snappy";
  load.on_result = [&](const LoadResult& result) {
    std::lock_guard<std::mutex> lock(mutex);
    if (result.is_reorg) {
      reorg = result;
      return;
    }
    const std::string& ranges =
        ampdelta::loader::MetadataText(result.metadata.at("block_ranges"));
    committed_to = std::max<uint64_t>(committed_to,
                                      std::stoull(ranges.substr(ranges.rfind('-') + 1)));
    if (!at_head && ampdelta::loader::MetadataText(result.metadata.at("block_ranges"))
                        .ends_with("-" + std::to_string(head))) {
      caught_up = Clock::now();
      at_head = true;
    }
  };
  const auto start = Clock::now();
  LoadResult streamed;
  std::thread loader([&] {
    streamed = ampdelta::loader::LoadStream(**client, sql, Config(table), load);
  });
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (at_head) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Follow the live head for 20 one-block microbatches, as a stream does after catching
  // up.
  for (uint64_t block = head + 1; block <= head + kLiveBlocks; ++block) {
    (void)(*server)->AdvanceHead(1);
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (committed_to >= block) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // A 10-block reorg at the head: its last 10 blocks get new hashes, then one more block.
  (void)(*server)->chain()->Reorg(10);
  (void)(*server)->AdvanceHead(1);
  loader.join();
  if (!streamed.success) return Fail(streamed.error);
  if (!reorg) return Fail("no reorg seen");
  const double catch_up = std::chrono::duration<double>(caught_up - start).count();
  const int64_t rows = static_cast<int64_t>(blocks) * txs;
  auto snapshot =
      *ampdelta::delta::Snapshot::Load(*ampdelta::storage::OpenObjectStore(table));

  // The same range as a batch load (the stream's alternative for a backfill).
  const std::string batch_table = dir + "/batch";
  ampdelta::loader::LoadOptions batch;
  batch.compression = "snappy";
  const auto batch_start = Clock::now();
  const auto loaded = ampdelta::loader::LoadBatch(
      **client, sql + " WHERE block_num <= " + std::to_string(head), Config(batch_table),
      batch);
  if (!loaded.success) return Fail(loaded.error);
  const double batch_seconds =
      std::chrono::duration<double>(Clock::now() - batch_start).count();
  std::filesystem::remove_all(batch_table);

  (*out)["reorg"] = {
      {"table", table},
      {"rows", rows},
      {"table_files", snapshot->files().size()},
      {"undo_seconds", reorg->duration},
      {"files_touched", std::get<int64_t>(reorg->metadata.at("files_touched"))},
      {"rows_removed", std::get<int64_t>(reorg->metadata.at("rows_removed"))},
  };
  (*out)["catch_up"] = {{"stream_seconds", catch_up},
                        {"stream_rows_per_second", rows / catch_up},
                        {"batch_seconds", batch_seconds},
                        {"batch_rows_per_second", rows / batch_seconds}};
  return 0;
}

// One round of undo-dv: what the undo cost and the rows it left.
struct UndoRound {
  double seconds = 0;
  int64_t rows_removed = 0;
  int64_t files_rewritten = 0;
  int64_t files_marked = 0;
  uint64_t bytes_written = 0;
  int64_t rows_after = 0;
  int64_t table_files = 0;
};

// Stream `blocks` blocks into a fresh table, compact it into large files, then resume the
// stream after a 10-block reorg at the head and time its undo.
std::optional<UndoRound> UndoInCompactedTable(const std::string& table, uint64_t blocks,
                                              uint32_t txs, bool deletion_vectors) {
  std::filesystem::remove_all(table);
  ampdelta::devserver::DevServerOptions options;
  options.chain.initial_blocks = blocks;
  options.chain.transactions_per_block = txs;
  auto server = ampdelta::devserver::DevServer::Start(options);
  if (!server.ok()) return std::nullopt;
  auto client = ampdelta::amp::Client::Connect((*server)->url());
  if (!client.ok()) return std::nullopt;
  const std::string sql = R"(SELECT * FROM "acme/eth_mainnet".transactions)";
  const uint64_t head = kFirst + blocks - 1;
  auto config = Config(table);
  if (deletion_vectors) config.table_properties["delta.enableDeletionVectors"] = "true";
  ampdelta::loader::LoadOptions load;
  load.compression = "snappy";
  load.until_block = head;
  if (!ampdelta::loader::LoadStream(**client, sql, config, load).success)
    return std::nullopt;
  auto store = *ampdelta::storage::OpenObjectStore(table);
  if (!ampdelta::delta::Optimize(store).ok()) return std::nullopt;
  UndoRound round;
  round.table_files =
      static_cast<int64_t>((*ampdelta::delta::Snapshot::Load(store))->files().size());
  const uint64_t bytes_before = DiskBytes(table);

  (void)(*server)->chain()->Reorg(10);
  (void)(*server)->AdvanceHead(1);
  std::optional<LoadResult> reorg;
  load.until_block = head + 1;
  load.on_result = [&reorg](const LoadResult& result) {
    if (result.is_reorg) reorg = result;
  };
  if (!ampdelta::loader::LoadStream(**client, sql, config, load).success || !reorg) {
    return std::nullopt;
  }
  // Bytes the undo and the one new block wrote (the new block's file is the same for
  // both).
  round.bytes_written = DiskBytes(table) - bytes_before;
  round.seconds = reorg->duration;
  round.rows_removed = std::get<int64_t>(reorg->metadata.at("rows_removed"));
  round.files_rewritten = std::get<int64_t>(reorg->metadata.at("files_rewritten"));
  round.files_marked = std::get<int64_t>(reorg->metadata.at("files_marked"));
  auto scan = *ampdelta::delta::TableScan::Make(*ampdelta::delta::Snapshot::Load(store),
                                                {{"block_num"}, std::nullopt});
  round.rows_after = (*scan->ToTable())->num_rows();
  return round;
}

int UndoWithAndWithoutDeletionVectors(const std::string& dir, uint64_t blocks,
                                      uint32_t txs, int rounds, nlohmann::json* out) {
  std::error_code created;
  std::filesystem::create_directories(dir, created);
  std::vector<double> seconds[2];
  nlohmann::json modes = nlohmann::json::object();
  std::optional<int64_t> rows_after;
  for (int r = 0; r < rounds; ++r) {
    for (int dv = 0; dv < 2; ++dv) {
      auto round = UndoInCompactedTable(dir + (dv ? "/with_dv" : "/without_dv"), blocks,
                                        txs, dv == 1);
      if (!round) return Fail("undo-dv round failed");
      if (rows_after && *rows_after != round->rows_after) {
        return Fail(
            "the undos left different row counts: " + std::to_string(*rows_after) +
            " and " + std::to_string(round->rows_after));
      }
      rows_after = round->rows_after;
      if ((dv == 1) != (round->files_marked > 0)) {
        return Fail("deletion vectors " + std::string(dv ? "unused" : "used") +
                    " by the undo");
      }
      seconds[dv].push_back(round->seconds);
      modes[dv ? "with_deletion_vectors" : "without_deletion_vectors"] = {
          {"rows_removed", round->rows_removed},
          {"files_rewritten", round->files_rewritten},
          {"files_marked", round->files_marked},
          {"bytes_written", round->bytes_written},
          {"table_files", round->table_files}};
    }
  }
  modes["without_deletion_vectors"]["undo_seconds_median"] = Median(seconds[0]);
  modes["with_deletion_vectors"]["undo_seconds_median"] = Median(seconds[1]);
  modes["without_deletion_vectors"]["undo_seconds"] = seconds[0];
  modes["with_deletion_vectors"]["undo_seconds"] = seconds[1];
  modes["rows"] = static_cast<int64_t>(blocks) * txs;
  modes["rows_after_undo"] = *rows_after;
  modes["with_over_without"] = Median(seconds[1]) / Median(seconds[0]);
  (*out)["undo_dv"] = std::move(modes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ampdelta::SelectDefaultMemoryPool();  // as the ampdelta tool does
  CLI::App app{"ampdelta streaming benchmarks"};
  std::string dir;
  uint64_t commits = 10000;
  uint64_t blocks = 100000;
  uint32_t txs = 100;
  std::string only;
  bool compact = false;
  bool keep = false;
  int64_t checkpoint_interval = 0;
  int64_t window = 50;
  app.add_option("--dir", dir, "work directory")->required();
  app.add_option("--commits", commits, "latency: commits to reach")
      ->capture_default_str();
  app.add_option("--blocks", blocks, "reorg: blocks of the streamed table")
      ->capture_default_str();
  app.add_option("--txs-per-block", txs, "reorg: transactions per block")
      ->capture_default_str();
  int rounds = 5;
  app.add_option("--only", only,
                 "latency, reorg or undo-dv (undo-dv runs only when named)");
  app.add_option("--rounds", rounds, "undo-dv: rounds of each mode")
      ->capture_default_str();
  app.add_flag("--compact", compact,
               "latency: compact as a stream does by default (optimize_after_write)");
  app.add_flag("--keep", keep, "latency: keep the table");
  app.add_option("--checkpoint-interval", checkpoint_interval,
                 "latency: delta.checkpointInterval of the table (default: 10)");
  app.add_option("--window", window,
                 "latency: the median over this many commits after each version")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!ampdelta::InitializeRuntime().ok()) return 1;
  nlohmann::json out;
  if (only.empty() || only == "latency") {
    if (int rc = Latency(dir, commits, compact, keep, checkpoint_interval, window, &out);
        rc != 0)
      return rc;
  }
  if (only.empty() || only == "reorg") {
    if (int rc = Reorg(dir, blocks, txs, &out); rc != 0) return rc;
  }
  if (only == "undo-dv") {
    if (int rc = UndoWithAndWithoutDeletionVectors(dir, blocks, txs, rounds, &out);
        rc != 0)
      return rc;
  }
  std::cout << out.dump(2) << std::endl;
  return 0;
}
