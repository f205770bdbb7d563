#pragma once

/// \file load_options.h
/// \brief What every load mode is given: the per-load options (the SDK's load()
/// keywords) and the cancellation a stop uses to end a query on a stalled server.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/common/load_result.h"
#include "ampdelta/loader/common/option_spelling.h"
#include "ampdelta/storage/object_store.h"
#include "ampdelta/util/backoff.h"

namespace ampdelta::loader {

/// \brief How a load writes into the table (the SDK's `mode`).
enum class LoadMode : uint8_t {
  kAppend,
  /// Replace every row of the table with the load's rows.
  kOverwrite,
  /// Update rows whose merge_keys match, insert the others (`merge` and `upsert`).
  kMerge,
  kUpsert,
  /// Fail if the table exists (`error`, `errorifexists`).
  kErrorIfExists,
  /// Write nothing if the table exists.
  kIgnore,
};

/// \brief Parse the SDK's mode names; kInvalidInput naming every supported one.
arrow::Result<LoadMode> ParseLoadMode(const std::string& name);

/// \brief The mode's name (`error` for kErrorIfExists).
const char* LoadModeName(LoadMode mode);

/// \brief Return true for merge and upsert.
bool IsMerge(LoadMode mode);

/// \brief Where a stream that finds foreign rows continues.
enum class TakeoverMode : uint8_t {
  /// Refuse, saying how to continue (the default: never load rows twice silently).
  kRefuse,
  /// After the table's highest block, re-loading the last blocks (the reorg window) so
  /// that rows no longer canonical are replaced.
  kAfterTableMax,
  /// At an explicit block: foreign rows from it on are replaced.
  kFromBlock,
};

/// \brief Cancels the server queries of loads from another thread: stopping a load
/// (LoadOptions::stop) takes effect between batches, but a stalled server sends none, so
/// whoever stops a load also cancels its queries here (the Python package's Ctrl-C).
/// Thread-safe.
class QueryCancellation {
 public:
  /// \brief Cancel every registered query, and any registered from now on.
  void CancelAll();
  /// \brief Register a query being read (cancelled at once after CancelAll); returns
  /// the handle to Unregister before the stream is destroyed.
  int Register(amp::QueryStream* stream);
  void Unregister(int handle);

 private:
  std::mutex mutex_;
  bool cancelled_ = false;
  int next_handle_ = 0;
  std::map<int, amp::QueryStream*> streams_;
};

/// \brief Registers a query with a QueryCancellation (if any) for its lifetime; declare
/// it after the stream, so that it unregisters before the stream is destroyed.
class ScopedCancellation {
 public:
  ScopedCancellation(QueryCancellation* cancellation, amp::QueryStream* stream)
      : cancellation_(cancellation),
        handle_(cancellation != nullptr ? cancellation->Register(stream) : 0) {}
  ~ScopedCancellation() {
    if (cancellation_ != nullptr) cancellation_->Unregister(handle_);
  }
  ScopedCancellation(const ScopedCancellation&) = delete;
  ScopedCancellation& operator=(const ScopedCancellation&) = delete;

 private:
  QueryCancellation* cancellation_;
  int handle_;
};

/// \brief Per-load options (the Python SDK's load() keywords).
struct LoadOptions {
  /// The configured connection to load into (Client::Sql(…).Load only).
  std::string connection;
  /// Names the load in results and logs; `table_path` decides where data goes.
  std::string destination;
  LoadMode mode = LoadMode::kAppend;
  /// Key columns for merge/upsert.
  std::vector<std::string> merge_keys;
  /// Commit every N rows instead of once at the end (huge loads): each commit is atomic,
  /// the load as a whole is not. Append and overwrite only (an overwrite replaces the
  /// table in its first commit and appends afterwards).
  std::optional<int64_t> commit_every_rows;
  /// Only changes how the result is reported: memory use is bounded either way.
  bool read_all = false;
  /// The SDK's batch_size: batch loads write and report (on_batch) what arrives in
  /// slices of at most this many rows; unset: as the server sends it.
  std::optional<int64_t> batch_size;
  /// Parquet codec (`writer_properties` compression) and level.
  std::string compression = "zstd";
  std::optional<int> compression_level;
  /// An already-open store to write to instead of opening `table_path` (custom stores,
  /// fault injection in tests).
  std::shared_ptr<storage::ObjectStore> store;
  /// Batch loads: fail (and retry per `resilience`) when the server sends nothing for
  /// this long in the middle of a result; nothing is committed. Streams: reconnect from
  /// the table (within the retry budget) when nothing arrives for this long inside a
  /// microbatch (between microbatches silence is normal). Zero waits forever.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  // Streaming (LoadStream).
  /// Undo the rows of reorged microbatches (false: load what arrives, undo nothing).
  bool with_reorg_detection = true;
  /// What a stream does in a table holding rows no stream of its query loaded
  /// (takeover.h): refuse (the default), or continue after the table's highest block…
  TakeoverMode takeover = TakeoverMode::kRefuse;
  /// How the caller writes options, for messages that name one (option_spelling.h).
  OptionSpelling option_spelling = OptionSpelling::kCli;
  /// …or (kFromBlock) at this block.
  uint64_t takeover_block = 0;
  /// The column holding each row's block number (the SDK's `block_column`).
  std::string block_column = "block_num";
  /// A commit groups complete microbatches until it holds this many rows…
  int64_t stream_commit_rows = 1'000'000;
  /// …or its first microbatch completed this long ago (live streams commit about this
  /// often).
  std::chrono::milliseconds stream_commit_interval{1000};
  /// With optimize_after_write: compact finalised files every this many commits…
  int64_t stream_compact_every_commits = 100;
  /// …where finalised means all of a file's ranges end this many blocks below the head.
  uint64_t stream_reorg_window_blocks = 256;
  /// The stream's client starts every stream from the dataset's first block whatever the
  /// table holds (a stream handed over from the Python SDK): what it sends again of the
  /// table's blocks is checked against their hashes and skipped, or replaced in one
  /// commit where nothing can be checked, never undone as a reorg (StreamInterpreter's
  /// `replays_from_start`).
  bool stream_replays_from_start = false;
  /// The network a takeover is of, when the caller knows it (a handed-over stream's first
  /// message names it): the server is not asked (ProbeNetworks).
  std::string takeover_network;
  /// Warn (log, result metadata `stalls`) when a stream resumed with a cursor hears
  /// nothing for this long; zero never warns.
  std::chrono::milliseconds stream_stall_warning{std::chrono::minutes(5)};
  /// Stop once a commit reaches this block (backfills, tests); run until stopped when
  /// unset.
  std::optional<uint64_t> until_block;
  /// Set to true to stop after the current commit (Ctrl-C); batch loads then also stop
  /// retrying, and wait for a retry in slices of at most 50 ms to see it.
  std::atomic<bool>* stop = nullptr;
  /// Where batch loads register the queries they read, so that a stop can cancel them.
  QueryCancellation* cancellation = nullptr;
  /// How retries wait: batch-load back-off and stream reconnects (which wait in slices
  /// of at most 50 ms, to see a stop). Tests pass a recorder.
  SleepFunction sleep = SleepFor;
  /// Streams report each commit and each reorg here.
  std::function<void(const LoadResult&)> on_result;
  /// Per-batch progress (unless read_all): a LoadResult for each batch received, with
  /// rows_loaded = the batch's rows and metadata batch_index, total_rows, total_bytes and
  /// the batch's block ranges. Rows become visible only with the load's final commit.
  std::function<void(const LoadResult& batch)> on_batch;
};

}  // namespace ampdelta::loader
