#include "ampdelta/loader/backfill/parallel_loader.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <arrow/type.h>
#include <arrow/type_traits.h>

#include "ampdelta/amp/query_text.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/conflict_checker.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/delta/write/write_plan.h"
#include "ampdelta/loader/backfill/coverage.h"
#include "ampdelta/loader/backfill/partition_grid.h"
#include "ampdelta/loader/batch/recorded_load.h"
#include "ampdelta/loader/common/load_common.h"
#include "ampdelta/loader/common/telemetry.h"
#include "ampdelta/loader/state/backfill_state.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using internal::Backoff;

// A partition re-plans after losing a race for its blocks at most this often.
constexpr int kMaxReplans = 16;

arrow::Result<std::shared_ptr<const delta::Snapshot>> LoadSnapshot(
    const std::shared_ptr<storage::ObjectStore>& store) {
  auto loaded = delta::Snapshot::Load(store);
  if (loaded.ok()) return std::shared_ptr<const delta::Snapshot>(*loaded);
  if (IsError(loaded.status(), ErrorCode::kNotFound)) {
    return std::shared_ptr<const delta::Snapshot>();
  }
  return loaded.status();
}

// The first block a stream of the query owns on `network` (its takeover block, or its
// first recorded range), or nullopt when it has loaded nothing there.
std::optional<uint64_t> StreamFirstBlock(const StreamState& stream,
                                         const std::string& network) {
  std::optional<uint64_t> first;
  if (auto takeover = stream.takeover_blocks.find(network);
      takeover != stream.takeover_blocks.end()) {
    first = takeover->second;
  }
  if (auto recorded = stream.FirstRecordedBlock(network)) {
    first = std::min(first.value_or(UINT64_MAX), *recorded);
  }
  return first;
}

class ParallelLoad {
 public:
  ParallelLoad(amp::Client& client, const std::string& sql, const DeltaLakeConfig& config,
               const LoadOptions& options, const ParallelOptions& parallel,
               LoadResult* result)
      : client_(client),
        sql_(sql),
        batch_sql_(amp::WithoutStreamSetting(sql)),
        app_id_(StreamAppId(sql)),
        config_(config),
        options_(options),
        parallel_(parallel),
        result_(result) {
    partition_config_ = PartitionConfig(config, parallel.num_workers);
  }

  arrow::Status Run() {
    ARROW_RETURN_NOT_OK(Validate());
    ARROW_ASSIGN_OR_RAISE(
        coverage_,
        ProbeCoverage(client_, batch_sql_, options_.block_column, config_, options_));
    ARROW_ASSIGN_OR_RAISE(store_, internal::OpenStore(config_, options_, result_));
    partition_options_ = options_;
    partition_options_.store = store_;
    partition_options_.on_batch = nullptr;
    ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(store_));
    ARROW_RETURN_NOT_OK(CheckWrite(snapshot.get()));
    ARROW_RETURN_NOT_OK(ChooseRange(snapshot.get()));
    if (stream_until_ || parallel_.then_stream) ARROW_RETURN_NOT_OK(CheckStreams());
    std::vector<Partition> partitions;
    if (range_) {
      BackfillState state;
      if (snapshot) {
        ARROW_ASSIGN_OR_RAISE(
            state, ReadBackfillState(*snapshot, app_id_, options_.block_column));
      }
      ARROW_RETURN_NOT_OK(CheckShardGrid(state));
      ARROW_RETURN_NOT_OK(CheckShortRecords(state));
      ReportStaleRecords(state);
      const auto missing = state.Missing(coverage_.network, *range_);
      if (snapshot) ARROW_RETURN_NOT_OK(CheckOtherWriters(*snapshot, missing));
      partitions = PlanPartitions(missing, grid_.partition_size, parallel_.shard_index,
                                  parallel_.shard_count);
    }
    AMPDELTA_LOG_INFO(
        "backfill of ", coverage_.network, " blocks ",
        range_              ? SpanText(*range_)
        : stream_owns_from_ ? "(none: the query's stream loads them from block " +
                                  std::to_string(*stream_owns_from_) + " on)"
                            : std::string("(none final)"),
        " into ", result_->table_name, ": ", partitions.size(), " partitions of up to ",
        grid_.partition_size, " blocks, ", parallel_.num_workers, " workers",
        parallel_.shard_count > 1 ? ", shard " + std::to_string(parallel_.shard_index) +
                                        "/" + std::to_string(parallel_.shard_count)
                                  : std::string());
    if (stream_owns_from_ && !stream_until_ && !parallel_.then_stream &&
        (!range_ || range_->last + 1 < parallel_.max_block.value_or(0) + 1)) {
      // The blocks left to the stream stay missing until it runs: say so.
      result_->metadata["stream_from_block"] = static_cast<int64_t>(*stream_owns_from_);
      AMPDELTA_LOG_WARN("blocks of ", coverage_.network, " from ", *stream_owns_from_,
                        " on are the query's stream's (it took the table over there): a "
                        "backfill leaves them to it; run the stream (load --stream with "
                        "the same SQL) to load them");
    }
    RunWorkers(partitions);
    ARROW_RETURN_NOT_OK(Report(partitions.size()));
    if (stream_until_ || parallel_.then_stream) return HandOff();
    return arrow::Status::OK();
  }

 private:
  arrow::Status Validate() const {
    if (parallel_.num_workers < 1)
      return InvalidInputError("num_workers must be at least 1");
    if (parallel_.partition_size && *parallel_.partition_size == 0) {
      return InvalidInputError("partition_size must be at least 1 block");
    }
    if (parallel_.partition_attempts < 1) {
      return InvalidInputError("partition attempts must be at least 1");
    }
    if (parallel_.reorg_buffer && *parallel_.reorg_buffer == 0) {
      return InvalidInputError("reorg_buffer must be at least 1 block");
    }
    if (parallel_.shard_count < 1 || parallel_.shard_index < 0 ||
        parallel_.shard_index >= parallel_.shard_count) {
      return InvalidInputError("shard " + std::to_string(parallel_.shard_index) + "/" +
                               std::to_string(parallel_.shard_count) +
                               " is not one of 0/N … N-1/N");
    }
    if (parallel_.shard_count > 1 && !parallel_.max_block) {
      return InvalidInputError(
          "shards need max_block (--max-block): each shard must cut the same range "
          "into the same partitions, whatever head it sees");
    }
    if (parallel_.shard_count > 1 && parallel_.then_stream) {
      return InvalidInputError(
          "a shard does not hand over to a stream: start the stream once, after every "
          "shard finished (docs/scale-out.md)");
    }
    if (parallel_.min_block && parallel_.max_block &&
        *parallel_.min_block > *parallel_.max_block) {
      return InvalidInputError("min_block " + std::to_string(*parallel_.min_block) +
                               " is above max_block " +
                               std::to_string(*parallel_.max_block));
    }
    if (options_.mode != LoadMode::kAppend) {
      return InvalidInputError("parallel loads append (mode '" +
                               std::string(LoadModeName(options_.mode)) +
                               "' loads with one worker)");
    }
    if (options_.commit_every_rows) {
      return InvalidInputError(
          "parallel loads commit once per partition: use partition_size instead of "
          "commit_every_rows");
    }
    if (!config_.state.enabled && (!parallel_.max_block || parallel_.then_stream)) {
      return InvalidInputError(
          "parallel loads hand the blocks a reorg may still reach to a stream, which "
          "needs state.enabled=true");
    }
    return arrow::Status::OK();
  }

  // What every partition would refuse (a codec, partition or clustering columns the
  // result or the table cannot take), refused once before the first one runs.
  arrow::Status CheckWrite(const delta::Snapshot* snapshot) const {
    ARROW_ASSIGN_OR_RAISE(auto write,
                          internal::WriteOptions(partition_config_, partition_options_));
    return delta::PlanWrite(snapshot, *coverage_.schema, write, store_->root_uri())
        .status();
  }

  // The blocks partitions load are final: at least the reorg window below the head.
  // The rest up to the head is loaded by a stream (which records their hashes and undoes
  // reorgs), as is everything after with then_stream. Blocks the query's stream already
  // owns are left to it.
  arrow::Status ChooseRange(const delta::Snapshot* snapshot) {
    const uint64_t window =
        parallel_.reorg_buffer.value_or(options_.stream_reorg_window_blocks);
    const uint64_t first = parallel_.min_block.value_or(coverage_.first);
    const uint64_t last = parallel_.max_block.value_or(coverage_.head);
    const std::string on = " on " + coverage_.network;
    if (last > coverage_.head) {
      return InvalidInputError(
          "max_block " + std::to_string(last) + " is past the server's head " +
          std::to_string(coverage_.head) + on +
          ": blocks above it are not there yet (leave max_block unset "
          "and hand over to a stream to follow the chain)");
    }
    if (first > last) {
      return InvalidInputError("min_block " + std::to_string(first) +
                               " is above the last block to load, " +
                               std::to_string(last));
    }
    const std::optional<uint64_t> final_block =
        coverage_.head >= window ? std::optional<uint64_t>(coverage_.head - window)
                                 : std::nullopt;
    if (parallel_.max_block && (!final_block || last > *final_block)) {
      return InvalidInputError(
          "max_block " + std::to_string(last) + " is within the reorg window (" +
          std::to_string(window) + " blocks below the head " +
          std::to_string(coverage_.head) + on +
          "): those blocks may still change, so a backfill cannot load them; leave "
          "max_block unset (a stream loads them), or lower it or reorg_buffer");
    }
    uint64_t backfill_last = final_block ? std::min(last, *final_block) : 0;
    bool any = final_block && first <= backfill_last;
    if (snapshot) {
      ARROW_ASSIGN_OR_RAISE(const StreamState stream, ReadStreamState(snapshot, app_id_));
      if (auto owned = StreamFirstBlock(stream, coverage_.network)) {
        stream_started_ = true;
        stream_owns_from_ = owned;
        if (*owned == 0 || *owned <= first) {
          any = false;
        } else {
          backfill_last = std::min(backfill_last, *owned - 1);
        }
      }
    }
    if (any) range_ = BlockSpan{first, backfill_last};
    if (!parallel_.max_block && !parallel_.then_stream) stream_until_ = coverage_.head;
    if (!range_ && !stream_started_ && first > coverage_.first &&
        (stream_until_ || parallel_.then_stream)) {
      return InvalidInputError(
          "min_block " + std::to_string(first) +
          " is within the reorg window of the head " + std::to_string(coverage_.head) +
          on +
          ": no block is final to backfill, and a stream starts at the "
          "server's first block; lower reorg_buffer or min_block");
    }
    grid_.shard_count = parallel_.shard_count;
    if (parallel_.partition_size) {
      grid_.partition_size = *parallel_.partition_size;
    } else if (range_) {
      grid_.partition_size =
          DefaultPartitionSize(*range_, parallel_.shard_count, parallel_.num_workers);
    }
    return arrow::Status::OK();
  }

  // The blocks of the reorg window are loaded by the query's stream: a query the server
  // cannot stream (an aggregate, say) is refused before anything is loaded.
  arrow::Status CheckStreams() {
    auto probed = ProbeNetworks(client_, sql_, options_.stop);
    if (probed.ok() || amp::IsTransientServerError(probed.status())) {
      return arrow::Status::OK();
    }
    const uint64_t window =
        parallel_.reorg_buffer.value_or(options_.stream_reorg_window_blocks);
    return probed.status().WithMessage(
        "the blocks of the reorg window (", window, " below the head ", coverage_.head,
        ") are loaded by the query's stream, and the server cannot stream it (",
        probed.status().message(),
        "); backfill final blocks only with --max-block (at most ",
        coverage_.head >= window ? coverage_.head - window : 0, ")");
  }

  // Shards of one range must cut it the same way, or some partitions belong to none.
  arrow::Status CheckShardGrid(const BackfillState& state) const {
    if (parallel_.shard_count == 1) return arrow::Status::OK();
    auto plans = state.plans.find(coverage_.network);
    if (plans == state.plans.end()) return arrow::Status::OK();
    for (const auto& [span, grid] : plans->second) {
      if (span == *range_ && grid.shard_count > 1 && !(grid == grid_)) {
        return InvalidInputError(
            "another shard cut blocks " + SpanText(span) + " into " +
            std::to_string(grid.partition_size) + "-block partitions over " +
            std::to_string(grid.shard_count) + " shards; this one would cut " +
            std::to_string(grid_.partition_size) + "-block partitions over " +
            std::to_string(grid_.shard_count) +
            ": run every shard with the same --partition-size and --shards");
      }
    }
    return arrow::Status::OK();
  }

  // Records whose blocks hold only some of their rows, in files without the tag (another
  // engine rewrote the files, then rows went): loading them again would duplicate the
  // rest, and leaving them would keep a gap. Refuse, naming them.
  arrow::Status CheckShortRecords(const BackfillState& state) const {
    for (const auto& [record, found] : state.short_records) {
      if (record.network != coverage_.network || record.span.last < range_->first ||
          record.span.first > range_->last) {
        continue;
      }
      return MakeError(
          ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "blocks ",
          SpanText(record.span), " of ", record.network, " hold ", found, " of the ",
          record.version,
          " rows the backfill loaded there, in files without its tags (another engine "
          "rewrote them, and rows went since): loading the blocks again would put the "
          "others there twice. Delete their rows (ampdelta table delete --where '",
          options_.block_column, " BETWEEN ", record.span.first, " AND ",
          record.span.last, "') and run the backfill again");
    }
    return arrow::Status::OK();
  }

  // Records whose rows are gone are ignored: their blocks load again.
  void ReportStaleRecords(const BackfillState& state) {
    std::vector<BlockSpan> stale;
    for (const auto& record : state.stale) {
      if (record.network == coverage_.network && record.span.first <= range_->last &&
          range_->first <= record.span.last) {
        stale.push_back(record.span);
      }
    }
    if (stale.empty()) return;
    const std::string text = SpansText(MergeSpans(std::move(stale)));
    result_->metadata["stale_records"] = text;
    AMPDELTA_LOG_WARN("the table records blocks ", text, " of ", coverage_.network,
                      " as backfilled, but no live file holds their rows (a restore, "
                      "an overwrite or a delete took them back): loading them again");
  }

  // Rows of other writers (the SDK, a plain load) in the blocks to load would be there
  // twice: refuse, naming them.
  arrow::Status CheckOtherWriters(const delta::Snapshot& snapshot,
                                  const std::vector<BlockSpan>& missing) const {
    const std::string tag = BackfillTagKey(app_id_);
    const int64_t rows = missing.empty() ? 0 : ForeignRows(snapshot, tag);
    if (rows == 0) return arrow::Status::OK();
    if (delta::FindFieldIgnoreCase(*snapshot.schema(), options_.block_column) < 0) {
      return InvalidInputError("the table holds rows another writer loaded and has no '" +
                               options_.block_column +
                               "' column to tell their blocks by");
    }
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const auto& part : missing) spans.emplace_back(part.first, part.last);
    ARROW_ASSIGN_OR_RAISE(const auto found,
                          ForeignRowsIn(snapshot, options_.block_column, spans, tag));
    for (size_t i = 0; i < missing.size(); ++i) {
      if (found[i] == 0) continue;
      ARROW_ASSIGN_OR_RAISE(auto span,
                            ForeignBlockSpan(snapshot, options_.block_column, tag));
      const auto [low, high] = span.value_or(std::make_pair(
          static_cast<int64_t>(missing[i].first), static_cast<int64_t>(missing[i].last)));
      return InvalidInputError(
          "the table holds " + std::to_string(rows) + " rows another writer loaded, " +
          options_.block_column + " " + std::to_string(low) + " to " +
          std::to_string(high) + ", and blocks " + SpanText(missing[i]) +
          " to load hold " + std::to_string(found[i]) +
          " of them: they would be there twice; delete them, or choose a min_block / "
          "max_block outside them");
    }
    return arrow::Status::OK();
  }

  void RunWorkers(const std::vector<Partition>& partitions) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      while (!Stopping()) {
        const size_t index = next.fetch_add(1);
        if (index >= partitions.size()) return;
        const Partition& partition = partitions[index];
        LoadResult loaded = LoadPartition(partition);
        std::lock_guard<std::mutex> lock(mutex_);
        if (loaded.success) {
          rows_ += loaded.rows_loaded;
          if (loaded.metadata.count("skipped") != 0) {
            ++skipped_;
          } else {
            ++loaded_;
          }
        } else if (loaded.metadata.count("stopped") != 0) {
          ++stopped_;  // a stop is not a failure: the re-run loads it
        } else {
          failed_.push_back({partition.span, loaded.error, loaded.status});
          if (parallel_.stop_on_error) stop_on_error_ = true;
        }
        if (parallel_.on_partition) parallel_.on_partition(loaded);
      }
    };
    const size_t workers =
        std::min(static_cast<size_t>(parallel_.num_workers), partitions.size());
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t i = 0; i < workers; ++i) threads.emplace_back(work);
    for (auto& thread : threads) thread.join();
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_on_error_ || StopRequested();
  }

  bool StopRequested() const { return options_.stop != nullptr && options_.stop->load(); }

  // Failures another attempt may cure: the server's (the batch load already retried the
  // transient ones per `resilience`) and transient storage errors.
  static bool RetryablePartitionFailure(const arrow::Status& status) {
    return ClassifyError(status) == ErrorClass::kServer || IsTransientError(status);
  }

  LoadResult LoadPartition(const Partition& partition) {
    LoadResult outcome;
    outcome.table_name = result_->table_name;
    outcome.loader_type = "parallel";
    outcome.metadata["partition_id"] = static_cast<int64_t>(partition.cell);
    outcome.metadata["start_block"] = static_cast<int64_t>(partition.span.first);
    outcome.metadata["end_block"] = static_cast<int64_t>(partition.span.last);
    outcome.metadata["block_column"] = options_.block_column;
    const auto start = std::chrono::steady_clock::now();
    arrow::Status status;
    int failures = 0;
    int replans = 0;
    while (true) {
      status = LoadMissing(partition, &outcome);
      if (status.ok()) break;
      // Another run (or the query's stream) committed some of these blocks first: load
      // what is still missing.
      if (IsError(status, ErrorCode::kCommitConflict) && replans < kMaxReplans &&
          !StopRequested()) {
        ++replans;
        continue;
      }
      // Bad input, a table ampdelta cannot write, a full disk: another attempt fails
      // the same way.
      if (++failures >= parallel_.partition_attempts || Stopping() ||
          !RetryablePartitionFailure(status)) {
        break;
      }
      const auto delay = Backoff(config_.retry, failures - 1);
      // The failed attempt was counted by its own load.
      telemetry::Retrying(
          status.WithMessage("partition ", coverage_.network, " ",
                             SpanText(partition.span), ": ", status.message()),
          failures, parallel_.partition_attempts - 1, delay);
      if (internal::SleepUnlessStopped(options_, delay)) break;
    }
    outcome.duration =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.success = status.ok();
    outcome.status = status;
    if (!status.ok()) {
      outcome.error = "blocks " + SpanText(partition.span) + ": " + status.message();
      outcome.rows_loaded = 0;
      if (StopRequested()) outcome.metadata["stopped"] = true;
    }
    outcome.metadata["attempts"] = static_cast<int64_t>(failures + (status.ok() ? 1 : 0));
    outcome.ops_per_second =
        outcome.duration > 0 ? static_cast<double>(outcome.rows_loaded) / outcome.duration
                             : 0;
    return outcome;
  }

  // What `snapshot` leaves to load of `span`: the blocks the table holds neither from
  // the backfill nor from the query's stream, and the records found stale on the way.
  struct Remaining {
    std::vector<BlockSpan> missing;
    std::set<std::string> stale_app_ids;
    bool stream_started = false;
  };
  arrow::Result<Remaining> StillMissing(const delta::Snapshot* snapshot,
                                        const BlockSpan& span) const {
    Remaining remaining;
    if (snapshot == nullptr) {
      remaining.missing.push_back(span);
      return remaining;
    }
    ARROW_ASSIGN_OR_RAISE(const StreamState stream, ReadStreamState(snapshot, app_id_));
    const auto owned = StreamFirstBlock(stream, coverage_.network);
    remaining.stream_started = owned.has_value();
    ARROW_ASSIGN_OR_RAISE(const BackfillState state,
                          ReadBackfillState(*snapshot, app_id_, options_.block_column));
    ARROW_RETURN_NOT_OK(CheckShardGrid(state));
    remaining.stale_app_ids = state.StaleAppIds(app_id_);
    for (auto part : state.Missing(coverage_.network, span)) {
      if (owned && *owned <= part.first) continue;
      if (owned) part.last = std::min(part.last, *owned - 1);
      remaining.missing.push_back(part);
    }
    return remaining;
  }

  // Load the blocks of `partition` the table does not hold, each missing span in one
  // commit, checked against the table as it is now (another writer, a shard cutting
  // the range differently, may have come since the run started).
  arrow::Status LoadMissing(const Partition& partition, LoadResult* outcome) {
    ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(store_));
    ARROW_ASSIGN_OR_RAISE(const Remaining remaining,
                          StillMissing(snapshot.get(), partition.span));
    if (remaining.missing.empty() && outcome->rows_loaded == 0)
      outcome->metadata["skipped"] = true;
    for (const auto& span : remaining.missing) {
      if (snapshot) ARROW_RETURN_NOT_OK(CheckOtherWriters(*snapshot, {span}));
      ARROW_ASSIGN_OR_RAISE(
          const std::string sql,
          amp::AddBlockFilter(batch_sql_, options_.block_column, span.first, span.last));
      LoadResult loaded =
          internal::LoadBatchRecorded(client_, sql, partition_config_, partition_options_,
                                      SpanRecords(span, remaining, snapshot));
      if (!loaded.success) return loaded.status;
      outcome->rows_loaded += loaded.rows_loaded;
      outcome->metadata.erase("skipped");
      // The next span's claim check reads the table as this commit left it.
      ARROW_ASSIGN_OR_RAISE(snapshot, LoadSnapshot(store_));
    }
    return arrow::Status::OK();
  }

  // What a span's commit records with its rows, and what it conflicts with.
  internal::LoadRecords SpanRecords(
      const BlockSpan& span, const Remaining& remaining,
      std::shared_ptr<const delta::Snapshot> snapshot) const {
    internal::LoadRecords records;
    const std::string claim = BackfillPartitionAppId(app_id_, coverage_.network, span);
    // The claim and the tag count the rows the commit holds (known at its end); a span
    // without rows still leaves its tag, on an empty file.
    records.app_transaction = delta::SetTransaction{claim, 0, {}};
    records.before_commit = [this, claim, span](int64_t rows,
                                                delta::TableWriter* writer) {
      writer->SetAppTransaction(delta::SetTransaction{claim, rows, {}});
      writer->SetFileTags(
          {{BackfillTagKey(app_id_),
            BackfillTagValue(BackfillPart{coverage_.network, span, rows})}});
      return rows == 0 ? writer->WriteEmptyFile() : arrow::Status::OK();
    };
    records.superseded_app_ids = remaining.stale_app_ids;
    records.transaction_records.push_back(delta::SetTransaction{
        BackfillPlanAppId(app_id_, coverage_.network, *range_, grid_),
        static_cast<int64_t>(range_->last),
        {}});
    records.overlapping_app_ids = [this, span, stream_started = remaining.stream_started](
                                      const std::string& app_id) {
      return ClaimsSpan(app_id, span, stream_started);
    };
    // Statistics name the block column physically under column mapping.
    const std::string stats_key =
        snapshot ? delta::PhysicalColumnName(*snapshot->schema(), options_.block_column)
                 : options_.block_column;
    records.claimed_adds = [this, span, stats_key](const delta::Add& file) {
      return HoldsBlocksOf(file, span, stats_key);
    };
    records.read_snapshot = std::move(snapshot);
    return records;
  }

  // A concurrent commit's `txn` that makes this span's commit a conflict: a partition
  // claiming any of its blocks, the query's stream starting meanwhile (it may own them),
  // a shard planning the same range on another grid (the re-plan then refuses).
  bool ClaimsSpan(const std::string& app_id, const BlockSpan& span,
                  bool stream_started) const {
    if (!stream_started && (app_id == app_id_ || IsTakeoverAppId(app_id_, app_id))) {
      return true;
    }
    if (auto other = ParseBackfillPartitionAppId(app_id_, app_id)) {
      return other->first == coverage_.network && other->second.first <= span.last &&
             span.first <= other->second.last;
    }
    if (auto plan = ParseBackfillPlanAppId(app_id_, app_id)) {
      return parallel_.shard_count > 1 && plan->network == coverage_.network &&
             plan->span == *range_ && plan->grid.shard_count > 1 &&
             !(plan->grid == grid_);
    }
    return false;
  }

  // A concurrent commit's data file that makes this span's commit a conflict: one of
  // this backfill's naming its blocks (a restore putting a partition back, another run),
  // or another writer's whose rows may lie in them (an overwrite).
  bool HoldsBlocksOf(const delta::Add& file, const BlockSpan& span,
                     const std::string& stats_key) const {
    auto parts = ReadBackfillTag(file, app_id_);
    if (!parts.ok()) return true;  // a tag that does not parse: assume the worst
    if (!parts->empty()) {
      return std::any_of(parts->begin(), parts->end(), [&](const BackfillPart& part) {
        return part.network == coverage_.network && part.span.first <= span.last &&
               span.first <= part.span.last;
      });
    }
    if (!IsForeignFile(file)) return false;  // the query's stream: its claims are txns
    const auto stats = StatsBlockSpan(file, stats_key);
    return !stats ||
           (stats->second >= 0 && static_cast<uint64_t>(stats->second) >= span.first &&
            (stats->first < 0 || static_cast<uint64_t>(stats->first) <= span.last));
  }

  // The outcome: what was loaded, what is missing and how to load it.
  arrow::Status Report(size_t planned) {
    result_->rows_loaded = rows_;
    result_->loader_type = "parallel";
    result_->metadata["operation"] = std::string("parallel_load");
    result_->metadata["network"] = coverage_.network;
    if (range_) {
      result_->metadata["min_block"] = static_cast<int64_t>(range_->first);
      result_->metadata["max_block"] = static_cast<int64_t>(range_->last);
    }
    result_->metadata["partition_size"] = static_cast<int64_t>(grid_.partition_size);
    result_->metadata["workers"] = static_cast<int64_t>(parallel_.num_workers);
    result_->metadata["partitions"] = static_cast<int64_t>(planned);
    result_->metadata["partitions_loaded"] = static_cast<int64_t>(loaded_);
    result_->metadata["partitions_skipped"] = static_cast<int64_t>(skipped_);
    result_->metadata["partitions_failed"] = static_cast<int64_t>(failed_.size());
    if (stopped_ > 0)
      result_->metadata["partitions_stopped"] = static_cast<int64_t>(stopped_);
    if (parallel_.shard_count > 1) {
      result_->metadata["shard"] = std::to_string(parallel_.shard_index) + "/" +
                                   std::to_string(parallel_.shard_count);
    }
    ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(store_));
    if (snapshot) {
      result_->metadata["table_version"] = static_cast<int64_t>(snapshot->version());
    }
    // What this run should have loaded and nothing covers (failed partitions, and any
    // not started after a stop).
    std::vector<BlockSpan> missing;
    if (range_) {
      ARROW_ASSIGN_OR_RAISE(const Remaining uncovered,
                            StillMissing(snapshot.get(), *range_));
      for (const auto& partition :
           PlanPartitions(uncovered.missing, grid_.partition_size, parallel_.shard_index,
                          parallel_.shard_count)) {
        missing.push_back(partition.span);
      }
    }
    missing = MergeSpans(std::move(missing));
    if (missing.empty()) {
      if (loaded_ > 0 && parallel_.shard_count == 1) {
        ARROW_ASSIGN_OR_RAISE(auto write, internal::WriteOptions(config_, options_));
        internal::RunMaintenance(store_, snapshot, config_, write, options_.block_column,
                                 result_);
      }
      return arrow::Status::OK();
    }
    const std::string ranges = SpansText(missing);
    result_->metadata["missing_ranges"] = ranges;
    std::string causes;
    for (const auto& failure : failed_) {
      causes += (causes.empty() ? "" : "; ") + failure.error;
    }
    const bool stopped = StopRequested();
    const std::string message = std::string(stopped ? "stopped; " : "") + "blocks " +
                                ranges + " of " + coverage_.network + " were not loaded" +
                                (causes.empty() ? "" : " (" + causes + ")") +
                                "; run the same command again to load only them (" +
                                std::to_string(result_->rows_loaded) +
                                " rows of the other partitions are committed)";
    // The partitions' own class (bad input, storage, …) when they share one.
    if (!stopped && !failed_.empty() && SharedClass()) {
      return failed_.front().status.WithMessage(message);
    }
    // Nothing failed, yet blocks are missing: the table changed under the run (a
    // restore or an overwrite took committed partitions back).
    if (!stopped && failed_.empty()) {
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError,
                       "the table changed while the backfill ran: ", message);
    }
    return MakeError(ErrorCode::kServerError,
                     stopped ? arrow::StatusCode::Cancelled : arrow::StatusCode::IOError,
                     message);
  }

  // True when every failed partition failed with the same class of error.
  bool SharedClass() const {
    return std::all_of(failed_.begin(), failed_.end(), [this](const Failure& failure) {
      return ClassifyError(failure.status) == ClassifyError(failed_.front().status);
    });
  }

  // The blocks after the backfill, loaded by the query's stream: it takes over after the
  // backfill's last block (final, so the block the server re-sends at the seam is the
  // same) and records every range it loads with its hash; or, when it already loads the
  // table, resumes where it is.
  arrow::Status HandOff() {
    if (options_.stop != nullptr && options_.stop->load()) return arrow::Status::OK();
    LoadOptions stream = options_;
    stream.store = store_;
    if (parallel_.reorg_buffer)
      stream.stream_reorg_window_blocks = *parallel_.reorg_buffer;
    if (stream_until_) stream.until_block = stream_until_;
    if (range_ && !stream_started_ && stream.takeover == TakeoverMode::kRefuse) {
      // The end of the recorded blocks the backfill's range ends in.
      ARROW_ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(store_));
      uint64_t end = range_->last;
      if (snapshot) {
        ARROW_ASSIGN_OR_RAISE(
            const BackfillState state,
            ReadBackfillState(*snapshot, app_id_, options_.block_column));
        if (auto spans = state.loaded.find(coverage_.network);
            spans != state.loaded.end()) {
          for (const auto& span : spans->second) {
            if (span.first <= range_->last && range_->last <= span.last) end = span.last;
          }
        }
      }
      stream.takeover = TakeoverMode::kFromBlock;
      stream.takeover_block = end + 1;
      result_->metadata["handoff_block"] = static_cast<int64_t>(end + 1);
      AMPDELTA_LOG_INFO("backfill complete to block ", end, "; streaming from block ",
                        end + 1);
    }
    LoadResult streamed = LoadStream(client_, sql_, config_, stream);
    result_->rows_loaded += streamed.rows_loaded;
    for (const auto& [key, value] : streamed.metadata) {
      result_->metadata["stream_" + key] = value;
    }
    return streamed.status;
  }

  amp::Client& client_;
  const std::string sql_;
  const std::string batch_sql_;
  const std::string app_id_;
  const DeltaLakeConfig& config_;
  DeltaLakeConfig partition_config_;
  const LoadOptions& options_;
  LoadOptions partition_options_;
  const ParallelOptions& parallel_;
  LoadResult* result_;
  Coverage coverage_;
  // The final blocks partitions load (none when nothing is final or the stream owns
  // them all).
  std::optional<BlockSpan> range_;
  BackfillGrid grid_;
  // Without max_block or then_stream: a stream loads the blocks above range_ up to this
  // head, then stops.
  std::optional<uint64_t> stream_until_;
  bool stream_started_ = false;
  // The first block the query's stream owns, when it has started.
  std::optional<uint64_t> stream_owns_from_;
  std::shared_ptr<storage::ObjectStore> store_;

  std::mutex mutex_;
  int64_t rows_ = 0;
  int64_t loaded_ = 0;
  int64_t skipped_ = 0;
  struct Failure {
    BlockSpan span;
    std::string error;
    arrow::Status status;
  };
  std::vector<Failure> failed_;
  int64_t stopped_ = 0;
  bool stop_on_error_ = false;
};

}  // namespace

LoadResult LoadParallel(amp::Client& client, const std::string& sql,
                        const DeltaLakeConfig& config, const LoadOptions& options,
                        const ParallelOptions& parallel) {
  LoadResult result = internal::RunLoad(config, options, [&](LoadResult* loading) {
    ParallelLoad load(client, sql, config, options, parallel, loading);
    return load.Run();
  });
  result.loader_type = "parallel";
  return result;
}

}  // namespace ampdelta::loader
