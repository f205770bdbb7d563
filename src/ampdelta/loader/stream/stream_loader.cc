// Over 600 lines on purpose: StreamLoad is one state machine (connect, read, commit,
// undo, reconnect) whose failure paths read best together. Its pure parts live beside it:
// commit_group.h, reorg_undo.h, stream_reader.h, stream_state.h and takeover.h.

#include "ampdelta/loader/stream/stream_loader.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/amp/server_error.h"
#include "ampdelta/amp/stream_interpreter.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/common/load_common.h"
#include "ampdelta/loader/common/option_spelling.h"
#include "ampdelta/loader/common/telemetry.h"
#include "ampdelta/loader/state/backfill_state.h"
#include "ampdelta/loader/state/stream_cursor_log.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/loader/stream/commit_group.h"
#include "ampdelta/loader/stream/reorg_undo.h"
#include "ampdelta/loader/stream/stream_reader.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

using Clock = std::chrono::steady_clock;

// The refusal when a stream finds `rows` foreign rows and no takeover was asked, naming
// the option as the caller writes it.
arrow::Status TakeoverRefusal(const std::string& table, int64_t rows,
                              const std::string& block_column, OptionSpelling spelling) {
  return InvalidInputError(
      "table ", table, " already holds ", rows,
      " rows that no ampdelta stream of this query loaded (the Python SDK, a batch load "
      "or another engine wrote them): streaming from the dataset's first block would "
      "load them again. Continue after its highest ",
      block_column, " with ",
      SpellOption(spelling, "takeover", {"after-table-max", "'after-table-max'"}),
      " (the last blocks of the reorg window are loaded again, so rows no longer "
      "canonical go), start at a block with ",
      SpellOption(spelling, "takeover", {"from-block:N", "('from-block', N)"}),
      " (rows from N on are replaced), or stream into an empty table");
}

// Completed ranges per network the interpreter is seeded with on (re)connect: enough to
// place any reorg the server can report inside what the table holds.
constexpr size_t kSeedRanges = 4096;

enum class Outcome : uint8_t { kEnded, kStopped, kReconnect };

// How long a stop waits for the microbatch in progress to complete.
constexpr std::chrono::milliseconds kStopGrace{500};

class StreamLoad {
 public:
  StreamLoad(amp::Client& client, std::string sql, const DeltaLakeConfig& config,
             const LoadOptions& options, std::shared_ptr<storage::ObjectStore> store,
             delta::TableWriteOptions write, LoadResult* result)
      : client_(client),
        sql_(std::move(sql)),
        config_(config),
        options_(options),
        store_(std::move(store)),
        write_(std::move(write)),
        result_(result),
        app_id_(StreamAppId(sql_)),
        group_(options.stream_commit_rows, options.stream_commit_interval) {}

  arrow::Status Run() {
    int failures = 0;
    while (true) {
      // A stream without progress looks again at every (re)connect: another writer (a
      // backfill) may have filled the table meanwhile.
      ARROW_RETURN_NOT_OK(Refresh());
      ARROW_RETURN_NOT_OK(TakeOverIfForeign());
      auto outcome = Connect();
      telemetry::Disconnected();
      Abandon();
      if (outcome.ok()) {
        if (*outcome != Outcome::kReconnect) return arrow::Status::OK();
        failures = 0;
        continue;
      }
      // Stopped while the server planned the query: nothing was received, nothing lost.
      if (Stopping() && outcome.status().IsCancelled()) return arrow::Status::OK();
      const arrow::Status& status = outcome.status();
      if (IsRolledBack(status)) {
        // A restore (or delete) took back files holding this stream's progress: what the
        // table now records is the truth, so resume from it and fill the hole.
        AMPDELTA_LOG_WARN("stream into ", result_->table_name, ": ", status.message(),
                          "; resuming from the table's state");
        result_->metadata["rollbacks"] = static_cast<int64_t>(++rollbacks_);
        continue;
      }
      if (commits_ > failures_reset_at_) failures = 0;  // progress since the last failure
      failures_reset_at_ = commits_;
      const bool mid_stream = std::exchange(failed_mid_stream_, false);
      const bool retryable =
          config_.retry.enabled && failures < config_.retry.max_retries &&
          (amp::IsTransientServerError(status) || IsRetryableConflict(status) ||
           (mid_stream && amp::IsRetryableMidStream(status)));
      if (!retryable) return status;
      // A lost commit race needs no server back-off, only a fresh look at the table.
      const auto delay = IsRetryableConflict(status)
                             ? std::chrono::milliseconds(50 * (failures + 1))
                             : internal::Backoff(config_.retry, failures);
      ++failures;
      telemetry::Failed(status);
      telemetry::Retrying(status, failures, config_.retry.max_retries, delay);
      result_->metadata["reconnects"] = static_cast<int64_t>(++reconnects_);
      if (Sleep(delay)) return arrow::Status::OK();
    }
  }

 private:
  // Re-read the table: the snapshot, the stream's txn version and recorded ranges.
  arrow::Status Refresh() {
    if (snapshot_ != nullptr) {
      ARROW_ASSIGN_OR_RAISE(snapshot_, snapshot_->Update());
    } else {
      auto loaded = delta::Snapshot::Load(store_);
      if (loaded.ok()) {
        snapshot_ = *loaded;
      } else if (!IsError(loaded.status(), ErrorCode::kNotFound)) {
        return loaded.status();
      }
    }
    ARROW_ASSIGN_OR_RAISE(
        state_, ReadStreamState(snapshot_.get(), app_id_, options_.block_column));
    return arrow::Status::OK();
  }

  // No progress, no takeover and no backfill of this query in the table.
  arrow::Result<bool> StartsFromScratch() const {
    if (state_.HasRecords() || !state_.takeover_blocks.empty()) return false;
    if (snapshot_ == nullptr) return true;
    ARROW_ASSIGN_OR_RAISE(const BackfillState backfill,
                          ReadBackfillState(*snapshot_, app_id_, options_.block_column));
    return backfill.loaded.empty();
  }

  using ForeignSpan = std::optional<std::pair<int64_t, int64_t>>;

  // A table holding rows no stream of this query loaded: refuse, or take it over as
  // options_.takeover says (takeover.h), in one commit with the stream's first txn.
  arrow::Status TakeOverIfForeign() {
    ARROW_ASSIGN_OR_RAISE(const int64_t foreign, ForeignRowsToTakeOver());
    if (foreign == 0) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(std::optional<uint64_t> from, RequestedTakeoverBlock());
    if (!from && options_.takeover == TakeoverMode::kRefuse) {
      // A query the server refuses is reported as the server's error, not as this.
      ARROW_RETURN_NOT_OK(ProbeNetworks(client_, sql_, options_.stop).status());
      return TakeoverRefusal(snapshot_->store()->root_uri(), foreign,
                             options_.block_column, options_.option_spelling);
    }
    ARROW_ASSIGN_OR_RAISE(const ForeignSpan span,
                          ForeignBlockSpan(*snapshot_, options_.block_column));
    if (!from) {
      ARROW_ASSIGN_OR_RAISE(from, AfterTableMax(span));
    } else {
      WarnIfTakeoverLeavesAGap(span, *from);
    }
    return CommitTakeover(foreign, *from, span);
  }

  // The foreign rows a stream must take over before loading (0: none, or already taken
  // over). A stream with progress in the table resumes from it; one without (new, or
  // whose files another writer replaced) must not load the other writer's rows again.
  arrow::Result<int64_t> ForeignRowsToTakeOver() const {
    if (!config_.state.enabled || snapshot_ == nullptr || state_.HasRecords()) return 0;
    const int64_t foreign = ForeignRows(*snapshot_);
    if (foreign == 0) return 0;
    if (state_.takeover_blocks.empty())
      return HasTakeoverRecord(*snapshot_) ? 0 : foreign;
    // Taken over, nothing of its own yet: the other writer's rows end below the takeover
    // block, unless someone (an overwrite) replaced the table since.
    const std::string& column = options_.block_column;
    if (delta::FindFieldIgnoreCase(*snapshot_->schema(), column) < 0) return 0;
    ARROW_ASSIGN_OR_RAISE(const ForeignSpan span, ForeignBlockSpan(*snapshot_, column));
    for (const auto& [network, block] : state_.takeover_blocks) {
      if (span && span->second >= static_cast<int64_t>(block)) return foreign;
    }
    return 0;
  }

  // The block a takeover starts at when one is given: --takeover-block, or after this
  // query's backfill when the foreign rows are all its own; nullopt otherwise.
  arrow::Result<std::optional<uint64_t>> RequestedTakeoverBlock() const {
    if (options_.takeover == TakeoverMode::kFromBlock) return options_.takeover_block;
    if (options_.takeover != TakeoverMode::kRefuse) return std::nullopt;
    ARROW_ASSIGN_OR_RAISE(auto handoff, BackfillEnd());
    if (!handoff) return std::nullopt;
    return *handoff + 1;
  }

  // After the table's highest block, re-loading the reorg window's blocks (never below
  // the table's first block, whose predecessor the server may not have).
  arrow::Result<uint64_t> AfterTableMax(const ForeignSpan& span) const {
    if (!span || span->second < 0) {
      return InvalidInputError("cannot continue after the table's highest ",
                               options_.block_column, ": its rows have no block number");
    }
    const auto high = static_cast<uint64_t>(span->second);
    const auto low = static_cast<uint64_t>(std::max<int64_t>(span->first, 0));
    const uint64_t window = options_.stream_reorg_window_blocks;
    const uint64_t from = std::max(low + 1, high + 1 > window ? high + 1 - window : 0);
    return std::min(from, high + 1);
  }

  // Nothing loads the blocks between the table's last one and a later takeover block.
  void WarnIfTakeoverLeavesAGap(const ForeignSpan& span, uint64_t from) {
    if (!span || span->second < 0 || from <= static_cast<uint64_t>(span->second) + 1)
      return;
    const std::string gap =
        std::to_string(span->second + 1) + "-" + std::to_string(from - 1);
    result_->metadata["takeover_gap"] = gap;
    AMPDELTA_LOG_WARN("stream into ", result_->table_name, ": the table's highest ",
                      options_.block_column, " is ", span->second,
                      " and the takeover starts at ", from, ": blocks ", gap,
                      " are in no load (take over from ", span->second + 1,
                      " to load them)");
  }

  // One DELETE commit: the foreign rows from `from` on removed, the takeover record.
  arrow::Status CommitTakeover(int64_t foreign, uint64_t from, const ForeignSpan& span) {
    const std::string& column = options_.block_column;
    // With no foreign row left below the takeover block there is nothing to resume after:
    // the stream starts where the server does (a cursor below the dataset's first block
    // would wait for ever), and loads no block twice.
    const bool rows_below = span && span->first < static_cast<int64_t>(from);
    std::vector<std::string> networks{options_.takeover_network};
    if (options_.takeover_network.empty()) {
      ARROW_ASSIGN_OR_RAISE(networks, ProbeNetworks(client_, sql_, options_.stop));
    }
    if (networks.size() != 1) {
      return InvalidInputError(
          "a takeover needs a query over one network; this one covers ", networks.size());
    }
    delta::TableWriteOptions write = write_;
    write.mode = delta::SaveMode::kAppend;
    write.read_snapshot = snapshot_;
    write.rewrites_rows = true;
    write.operation = "DELETE";
    write.transaction_records.push_back(
        delta::SetTransaction{TakeoverAppId(app_id_, networks[0]),
                              rows_below ? static_cast<int64_t>(from) : 0,
                              {}});
    // The stream's seed is `from` itself (stream_state.h): the server sends it first,
    // and the rows it replaces go in this commit, not as the undo of a rewind.
    write.operation_parameters = {
        {"predicate", "[\"takeover: " + column + " >= " + std::to_string(from) + "\"]"}};
    ARROW_ASSIGN_OR_RAISE(auto writer,
                          delta::TableWriter::Open(store_, snapshot_->schema(), write));
    ARROW_ASSIGN_OR_RAISE(const int64_t removed,
                          StageForeignUndo(*snapshot_, column, from, writer.get()));
    ARROW_RETURN_NOT_OK(Finish(writer.get(), nullptr, state_.cursor_log));
    AMPDELTA_LOG_INFO("stream into ", result_->table_name,
                      " took the table over: ", foreign,
                      " rows by another writer, network ", networks[0], " from block ",
                      from, " (", removed, " rows from it on removed)");
    result_->metadata["takeover_block"] = static_cast<int64_t>(from);
    rows_undone_ += removed;
    return Refresh();
  }

  // The last block of this query's backfill (backfill_state.h) when the table's foreign
  // rows are all the backfill's; an error when the backfill left blocks out.
  arrow::Result<std::optional<uint64_t>> BackfillEnd() const {
    ARROW_ASSIGN_OR_RAISE(const BackfillState backfill,
                          ReadBackfillState(*snapshot_, app_id_, options_.block_column));
    if (backfill.loaded.empty()) return std::nullopt;
    // Untagged rows inside the backfill's blocks are its own (a reorg undo rewrote their
    // file); any others are another writer's.
    if (ForeignRows(*snapshot_, BackfillTagKey(app_id_)) > 0) {
      ARROW_ASSIGN_OR_RAISE(auto span, ForeignBlockSpan(*snapshot_, options_.block_column,
                                                        BackfillTagKey(app_id_)));
      const auto& spans = backfill.loaded.begin()->second;
      if (backfill.loaded.size() != 1 || !span ||
          span->first < static_cast<int64_t>(spans.front().first) ||
          span->second > static_cast<int64_t>(spans.back().last)) {
        return std::nullopt;
      }
    }
    // Blocks a run set out to load and did not, or gaps between runs' blocks.
    std::string missing;
    for (const auto& [network, spans] : backfill.Unfinished()) {
      for (const auto& span : spans) {
        missing += (missing.empty() ? "" : ", ") + network + " " + SpanText(span);
      }
    }
    if (!missing.empty()) {
      return InvalidInputError(
          "the backfill of this query is incomplete (blocks ", missing,
          " are missing): run it again to load them before streaming");
    }
    if (backfill.loaded.size() != 1) {
      return InvalidInputError("the backfill of this query covers ",
                               backfill.loaded.size(),
                               " networks; a stream continues one");
    }
    return backfill.loaded.begin()->second.front().last;
  }

  // What the read loop knows of one connection.
  struct Connection {
    amp::QueryOptions query;
    amp::StreamInterpreter interpreter;
    Clock::time_point connected;
    Clock::time_point last_heard;
    bool heard = false;
    // Inside a microbatch (after its first message, before its marker) ampd sends a
    // keep-alive at least every 30 s; between microbatches silence is normal.
    bool in_microbatch = false;
    std::optional<Clock::time_point> stop_seen;
  };

  // Open the query after the table's cursor, then route the server's events until the
  // stream ends, stops or has to reconnect.
  arrow::Result<Outcome> Connect() {
    Connection connection;
    connection.interpreter = amp::StreamInterpreter(InterpreterOptions());
    connection.query = ResumeQuery(&connection.interpreter);
    if (AlreadyReachedUntil(connection.query)) return Outcome::kStopped;
    ARROW_ASSIGN_OR_RAISE(auto stream, client_.Query(sql_, connection.query));
    telemetry::Connected(RedactUrl(client_.url()), result_->table_name, /*stream=*/true);
    StreamReader reader(std::move(stream));
    connection.connected = connection.last_heard = Clock::now();
    stall_warned_ = false;
    while (true) {
      std::optional<Outcome> outcome;
      if (Stopping()) {
        ARROW_ASSIGN_OR_RAISE(outcome, OnStop(&connection));
        if (outcome) return *outcome;
      }
      std::optional<StreamMessage> popped = reader.queue().Pop(group_.WaitTime());
      if (!popped) {
        ARROW_RETURN_NOT_OK(OnQuiet(connection));
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(outcome, OnMessage(std::move(*popped), &connection));
      if (outcome) return *outcome;
    }
  }

  // The streaming query, resumed after the table's cursor, with `interpreter` seeded by
  // what the table completed (when the stream keeps state).
  amp::QueryOptions ResumeQuery(amp::StreamInterpreter* interpreter) const {
    amp::QueryOptions query;
    query.stream = true;
    query.stop = options_.stop;
    if (!config_.state.enabled) return query;
    SeedInterpreter(interpreter);
    const amp::Cursor cursor = state_.ResumeCursor();
    if (!cursor.empty()) query.resume = cursor;
    telemetry::Resumed(cursor);
    return query;
  }

  // The interpreter sees a microbatch the table completed as a replay or a reorg.
  void SeedInterpreter(amp::StreamInterpreter* interpreter) const {
    // A takeover's or a backfill's seed is the stream's own first block, which the server
    // sends as its first microbatch: not a rewind (but for a legacy takeover's,
    // stream_state.h).
    std::vector<amp::BlockRange> seeds = state_.TakeoverSeeds();
    std::erase_if(seeds, [this](const amp::BlockRange& seed) {
      return !state_.SeedIsRewind(seed.network);
    });
    interpreter->SeedCompleted(seeds);
    std::set<std::string> networks;
    for (const auto* lists : {&state_.ranges, &state_.spans}) {
      for (const auto& [network, list] : *lists) networks.insert(network);
    }
    for (const auto& network : networks) {
      const std::vector<amp::BlockRange> ranges = state_.Recorded(network);
      const size_t skip = ranges.size() > kSeedRanges ? ranges.size() - kSeedRanges : 0;
      interpreter->SeedCompleted(
          {ranges.begin() + static_cast<std::ptrdiff_t>(skip), ranges.end()});
      // A replay from the first block is checked against every range the table holds.
      if (options_.stream_replays_from_start) interpreter->SeedHistory(ranges);
    }
  }

  amp::StreamInterpreter::Options InterpreterOptions() const {
    amp::StreamInterpreter::Options options;
    options.replays_from_start = options_.stream_replays_from_start;
    return options;
  }

  bool AlreadyReachedUntil(const amp::QueryOptions& query) const {
    if (!options_.until_block || !query.resume) return false;
    for (const auto& [network, entry] : *query.resume) {
      if (entry.number >= *options_.until_block) return true;
    }
    return false;
  }

  // A stop commits what is complete. A microbatch still arriving gets a moment to
  // complete; one the server stalls in is given up (its rows are not committed: the next
  // run loads it again).
  arrow::Result<std::optional<Outcome>> OnStop(Connection* connection) {
    ARROW_RETURN_NOT_OK(CommitIfIdle());
    if (group_.open_rows() == 0) return std::optional<Outcome>(Outcome::kStopped);
    if (!connection->stop_seen) connection->stop_seen = Clock::now();
    if (Clock::now() - *connection->stop_seen >= kStopGrace) {
      return std::optional<Outcome>(Outcome::kStopped);
    }
    return std::optional<Outcome>();
  }

  // Nothing arrived: commit what is due, warn when a resumed stream hears nothing, and
  // give up a microbatch the server went silent inside (the stream reconnects from the
  // table, within the retry budget).
  arrow::Status OnQuiet(const Connection& connection) {
    if (group_.Due()) ARROW_RETURN_NOT_OK(CommitIfIdle());
    WarnIfStalled(connection.query, connection.connected, connection.heard);
    if (connection.in_microbatch && options_.idle_timeout.count() > 0 &&
        Clock::now() - connection.last_heard >= options_.idle_timeout) {
      failed_mid_stream_ = true;
      return StalledInsideMicrobatch();
    }
    return arrow::Status::OK();
  }

  // One message from the server: the stream's end, a reorg, rows, or a microbatch's end.
  arrow::Result<std::optional<Outcome>> OnMessage(StreamMessage popped,
                                                  Connection* connection) {
    connection->heard = true;
    connection->last_heard = Clock::now();
    telemetry::Heard();
    if (!popped.ok()) {
      failed_mid_stream_ = true;  // the query was planned: a failure now may pass
      // The complete microbatches are committed before the failure is reported (unless
      // an unfinished one shares their files).
      ARROW_RETURN_NOT_OK(CommitIfIdle());
      return WithProgress(popped.status());
    }
    std::optional<amp::ResponseBatch> message = std::move(*popped);
    if (!message) {
      ARROW_RETURN_NOT_OK(CommitIfIdle());
      if (!pending_replace_.empty()) return EndedInsideReplacement();
      if (group_.open_rows() > 0) return EndedInsideMicrobatch();
      return std::optional<Outcome>(Outcome::kEnded);
    }
    const int64_t rows = message->data->num_rows();
    ARROW_ASSIGN_OR_RAISE(auto event,
                          connection->interpreter.Accept(message->metadata, rows));
    connection->in_microbatch = event.kind != amp::StreamEvent::Kind::kMicrobatchEnd;
    telemetry::Received(event.ranges);
    if (event.is_reorg()) {
      ARROW_ASSIGN_OR_RAISE(const bool reconnect,
                            OnReorg(*message, rows, connection, &event));
      if (reconnect) return std::optional<Outcome>(Outcome::kReconnect);
    }
    if (!event.replaces.empty()) ARROW_RETURN_NOT_OK(OnReplace(event.replaces));
    // A microbatch the table already has: every message of it is skipped.
    if (event.replayed) return std::optional<Outcome>();
    if (event.kind == amp::StreamEvent::Kind::kData && rows > 0) {
      ARROW_RETURN_NOT_OK(OnData(message->data, event.ranges));
    } else if (event.kind == amp::StreamEvent::Kind::kMicrobatchEnd) {
      return OnMicrobatchEnd(event.ranges);
    }
    return std::optional<Outcome>();
  }

  // A reorg is undone with reorg detection, and where it re-sends a takeover's seed
  // block (the stream's own cursor asked for it again); otherwise it is counted and
  // left in the table. Returns true when the stream must reconnect: after a partial
  // reorg the rows before the fork in the straddling range are not re-sent, nor are
  // those of a span the undo removed, so it resumes from what the table now holds.
  arrow::Result<bool> OnReorg(const amp::ResponseBatch& message, int64_t rows,
                              Connection* connection, amp::StreamEvent* event) {
    ++reorgs_;
    if (options_.with_reorg_detection || TouchesTakeoverSeed(event->invalidated)) {
      ARROW_RETURN_NOT_OK(CommitIfIdle());
      ARROW_ASSIGN_OR_RAISE(const bool undid_below_fork, Undo(event->invalidated));
      return event->partial_reorg || undid_below_fork;
    }
    telemetry::ReorgUndone(result_->table_name,
                           snapshot_ != nullptr ? snapshot_->version() : -1,
                           amp::NetworkSpansText(event->invalidated), 0, 0, 0);
    if (event->partial_reorg) {
      // Nothing is undone: go on with what arrives. The interpreter gave up the
      // straddling range, so restart it at the fork's parent and read this message again.
      connection->interpreter = amp::StreamInterpreter(InterpreterOptions());
      connection->interpreter.SeedCompleted(ForkParents(event->ranges));
      ARROW_ASSIGN_OR_RAISE(*event,
                            connection->interpreter.Accept(message.metadata, rows));
    }
    return false;
  }

  // The block before each range (none for a fork at genesis), with its hash.
  static std::vector<amp::BlockRange> ForkParents(
      const std::vector<amp::BlockRange>& ranges) {
    std::vector<amp::BlockRange> parents;
    for (const auto& range : ranges) {
      if (range.start == 0) continue;
      amp::BlockRange parent;
      parent.network = range.network;
      parent.start = parent.end = range.start - 1;
      parent.hash = range.prev_hash;
      parents.push_back(std::move(parent));
    }
    return parents;
  }

  arrow::Status OnData(const std::shared_ptr<arrow::RecordBatch>& data,
                       const std::vector<amp::BlockRange>& ranges) {
    if (ranges.empty()) {
      // Without block ranges rows cannot be placed, committed or resumed after.
      return ProtocolError("the server sent ", data->num_rows(),
                           " rows without block ranges "
                           "(app_metadata): a streaming load needs them");
    }
    return WriteRows(data, ranges);
  }

  arrow::Result<std::optional<Outcome>> OnMicrobatchEnd(
      const std::vector<amp::BlockRange>& ranges) {
    ARROW_RETURN_NOT_OK(CompleteMicrobatch(ranges));
    if (!ReachedUntil()) return std::optional<Outcome>();
    ARROW_RETURN_NOT_OK(CommitIfIdle());
    return std::optional<Outcome>(Outcome::kStopped);
  }

  bool Stopping() const { return options_.stop != nullptr && options_.stop->load(); }

  bool TouchesTakeoverSeed(const std::vector<amp::BlockRange>& invalidated) const {
    for (const auto& seed : state_.TakeoverSeeds()) {
      for (const auto& fork : invalidated) {
        if (fork.network == seed.network && fork.start <= seed.end) return true;
      }
    }
    return false;
  }

  // A replay re-sends blocks the table holds without a hash to check them by: they are
  // loaded again, and their old rows go in the commit that reaches their end.
  arrow::Status OnReplace(const std::vector<amp::BlockRange>& replaced) {
    ARROW_RETURN_NOT_OK(CommitIfIdle());
    for (const auto& range : replaced) {
      AMPDELTA_LOG_INFO("stream into ", result_->table_name, ": the server sends blocks ",
                        range.network, ":", range.start, "-", range.end,
                        " the table holds again, without hashes to check them by: they "
                        "replace the table's in one commit");
      pending_replace_.push_back(range);
    }
    return arrow::Status::OK();
  }

  // Whether the group has reached the end of every range a replacement replaces.
  bool ReplacementReached() const {
    for (const auto& replaced : pending_replace_) {
      const bool reached = std::any_of(
          group_.ranges().begin(), group_.ranges().end(), [&](const amp::BlockRange& r) {
            return r.network == replaced.network && r.end >= replaced.end;
          });
      if (!reached) return false;
    }
    return true;
  }

  // A failure, with what the stream committed and what it leaves out.
  arrow::Status WithProgress(const arrow::Status& status) const {
    const int64_t left_out = group_.rows() + group_.open_rows();
    if (left_out == 0 && rows_loaded_ == 0) return status;
    std::string progress = "; " + std::to_string(rows_loaded_) + " rows were committed";
    if (left_out > 0) {
      progress +=
          ", " + std::to_string(left_out) +
          " rows of microbatches not yet complete (or not reaching the end of the "
          "blocks they replace) were left out (running the stream again loads them)";
    }
    result_->metadata["rows_left_out"] = left_out;
    return status.WithMessage(status.message(), progress);
  }

  // A replacement commits only once it holds every block it replaces: a reader never sees
  // the table emptier. A stream that ends short of them leaves the table as it was.
  arrow::Status EndedInsideReplacement() const {
    return ProtocolError(
        "the stream ended before reaching the end of the blocks it sent "
        "again unchecked (",
        amp::NetworkSpansText(pending_replace_),
        "): the table keeps its own rows of them, and the ",
        group_.rows() + group_.open_rows(),
        " rows sent since were not committed (running the stream again "
        "loads them)");
  }

  // The complete microbatches share their files with the unfinished one's rows, so none
  // can be committed: say so rather than end as if all were loaded.
  arrow::Status EndedInsideMicrobatch() const {
    return ProtocolError("the stream ended inside a microbatch: ", group_.rows(),
                         " rows of complete microbatches and ", group_.open_rows(),
                         " rows of the unfinished one were not committed (running the "
                         "stream again loads them)");
  }

  arrow::Status StalledInsideMicrobatch() const {
    const double seconds = static_cast<double>(options_.idle_timeout.count()) / 1000.0;
    return MakeError(
               ErrorCode::kServerError, arrow::StatusCode::IOError,
               "DoGet failed: DEADLINE_EXCEEDED: the server sent nothing for ", seconds,
               " s inside a microbatch (idle timeout; ampd sends a keep-alive at least "
               "every 30 s there); it may be stalled")
        .WithDetail(
            std::make_shared<ErrorDetail>(ErrorCode::kServerError, "DEADLINE_EXCEEDED"));
  }

  // ampd sends nothing at all for a cursor it cannot serve (a block below its first one,
  // or one it lacks): say so once, rather than wait in silence.
  void WarnIfStalled(const amp::QueryOptions& query, Clock::time_point connected,
                     bool heard) {
    if (heard || !query.resume || stall_warned_ ||
        options_.stream_stall_warning.count() <= 0 ||
        Clock::now() - connected < options_.stream_stall_warning) {
      return;
    }
    stall_warned_ = true;
    result_->metadata["stalls"] = static_cast<int64_t>(++stalls_);
    AMPDELTA_LOG_WARN("stream into ", result_->table_name, ": no microbatch for ",
                      static_cast<double>(options_.stream_stall_warning.count()) / 1000.0,
                      " s since resuming after ", amp::CursorToJson(*query.resume),
                      "; a server that lacks that block (below its first one?) waits for "
                      "ever, one at the chain's head waits for the next block");
  }

  bool ReachedUntil() const {
    if (!options_.until_block) return false;
    for (const auto& [network, entry] : reached_) {
      if (entry >= *options_.until_block) return true;
    }
    return false;
  }

  // Wait `delay` through options_.sleep, in slices so a stop is seen within 50 ms;
  // return true when stopping.
  bool Sleep(std::chrono::milliseconds delay) const {
    return internal::SleepUnlessStopped(options_, delay);
  }

  arrow::Status WriteRows(const std::shared_ptr<arrow::RecordBatch>& data,
                          const std::vector<amp::BlockRange>& ranges) {
    std::shared_ptr<arrow::RecordBatch> batch = data;
    if (config_.state.store_batch_id) {
      // The loader owns this column: a query column of that name would be overwritten.
      if (delta::FindFieldIgnoreCase(*batch->schema(), kBatchIdColumn) >= 0) {
        return InvalidInputError(
            "the query returns a column named '", kBatchIdColumn,
            "', which a streaming load adds itself (the rows' microbatch ids): "
            "rename it in the query (SELECT … AS other_name)");
      }
      ARROW_ASSIGN_OR_RAISE(batch, AddBatchIdColumn(batch, BatchIdValue(ranges)));
    }
    if (writer_ == nullptr) {
      delta::TableWriteOptions write = write_;
      write.read_snapshot = snapshot_;
      write.expect_new_table = snapshot_ == nullptr;  // the state said: no table yet
      write.operation = "STREAMING UPDATE";
      write.operation_parameters = {{"outputMode", "Append"}, {"queryId", app_id_}};
      // A replacement's commit removes the old rows of the blocks it loads again.
      write.rewrites_rows = !pending_replace_.empty();
      // A stream with nothing in the table yet starts at the dataset's first block: a
      // backfill of its query committing meanwhile makes that a conflict (the restart
      // then takes over after the backfill, or refuses while it runs).
      ARROW_ASSIGN_OR_RAISE(const bool from_scratch, StartsFromScratch());
      if (from_scratch) {
        const std::string backfill = app_id_ + "/backfill/";
        write.overlapping_app_ids = [backfill](const std::string& app_id) {
          return app_id.rfind(backfill, 0) == 0;
        };
        // Records the table already has are stale (their rows are gone), or the stream
        // would not start from scratch.
        if (snapshot_ != nullptr) {
          for (const auto& [app_id, txn] : snapshot_->app_transactions()) {
            if (app_id.rfind(backfill, 0) == 0) write.superseded_app_ids.insert(app_id);
          }
        }
      }
      ARROW_ASSIGN_OR_RAISE(writer_,
                            delta::TableWriter::Open(store_, batch->schema(), write));
    }
    ARROW_RETURN_NOT_OK(writer_->Write(batch));
    group_.AddOpenRows(batch->num_rows());
    return arrow::Status::OK();
  }

  arrow::Status CompleteMicrobatch(const std::vector<amp::BlockRange>& ranges) {
    for (const auto& range : ranges) {
      head_[range.network] = std::max(head_[range.network], range.end);
      reached_[range.network] = std::max(reached_[range.network], range.end);
    }
    group_.CompleteMicrobatch(ranges);
    if (group_.Due() || ReachedUntil()) return CommitIfIdle();
    return arrow::Status::OK();
  }

  // Commit the complete microbatches written so far (never a partial one). A group that
  // replaces blocks of the table commits once it reaches their end, with their old rows
  // removed in the same commit.
  arrow::Status CommitIfIdle() {
    if (!group_.Committable()) return arrow::Status::OK();
    if (!ReplacementReached()) return arrow::Status::OK();
    const std::vector<amp::BlockRange> committed = group_.ranges();
    CursorLog cursor_log = state_.cursor_log;
    int64_t rows_replaced = 0;
    std::vector<amp::BlockRange> tagged = committed;
    std::vector<amp::BlockRange> kept_spans;
    if (!pending_replace_.empty()) {
      ARROW_ASSIGN_OR_RAISE(const UndoPlan plan, PlanUndo(pending_replace_));
      ARROW_ASSIGN_OR_RAISE(const UndoStaged staged,
                            StageUndoInto(writer_.get(), plan, pending_replace_));
      cursor_log = CursorLogAfterUndo(staged, plan.undo_from);
      rows_replaced = staged.rows_removed;
      // The rows the rewritten files keep share the commit's files with the new ones:
      // the tags name both.
      tagged.insert(tagged.begin(), staged.kept_ranges.begin(), staged.kept_ranges.end());
      kept_spans = staged.kept_spans;
    }
    // Set after the undo, which sets the tags of the files it rewrites.
    delta::NullableStringMap tags{{RangesTagKey(app_id_), RangesToTag(tagged)}};
    if (!kept_spans.empty()) tags[SpansTagKey(app_id_)] = RangesToTag(kept_spans);
    writer_->SetFileTags(std::move(tags));
    const auto commit_start = Clock::now();
    ARROW_RETURN_NOT_OK(
        Finish(writer_.get(), &committed, AdvanceCursorLog(cursor_log, committed)));
    const double commit_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - commit_start).count();
    const int64_t rows = group_.rows();
    writer_.reset();
    LoadResult commit;
    commit.table_name = result_->table_name;
    commit.success = true;
    commit.rows_loaded = rows;
    commit.duration = group_.Age().count();
    commit.metadata["table_version"] = static_cast<int64_t>(snapshot_->version());
    commit.progress.block_ranges = amp::NetworkSpansText(committed);
    commit.metadata["block_ranges"] = commit.progress.block_ranges;
    // Closing the files, the commit and reading it back: what a live microbatch waits
    // for.
    commit.metadata["commit_ms"] = commit_ms;
    if (!pending_replace_.empty()) {
      commit.metadata["rows_replaced"] = rows_replaced;
      commit.metadata["blocks_replaced"] = amp::NetworkSpansText(pending_replace_);
      pending_replace_.clear();
      // The replaced files changed under the stream's state: read it again.
      ARROW_RETURN_NOT_OK(Refresh());
    }
    if (committed.back().timestamp) {
      commit.progress.end_timestamp = static_cast<int64_t>(*committed.back().timestamp);
      commit.metadata["end_timestamp"] =
          static_cast<int64_t>(*commit.progress.end_timestamp);
    }
    rows_loaded_ += rows;
    group_.ClearCommitted();
    Report(commit);
    telemetry::Committed({result_->table_name, snapshot_->version(), rows,
                          last_written_.files_added, last_written_.bytes,
                          commit_ms / 1000, committed});
    return MaybeCompact();
  }

  static bool HasSubcode(const arrow::Status& status, const char* subcode) {
    const ErrorDetail* detail = GetErrorDetail(status);
    return detail != nullptr && detail->code() == ErrorCode::kCommitConflict &&
           detail->subcode() == subcode;
  }
  static bool IsRolledBack(const arrow::Status& status) {
    return HasSubcode(status, delta::kRolledBack);
  }
  // A commit that lost to a concurrent change of the same files (not to another loader of
  // this stream): starting over from the table's state resolves it.
  static bool IsRetryableConflict(const arrow::Status& status) {
    return IsError(status, ErrorCode::kCommitConflict) &&
           !HasSubcode(status, delta::kConcurrentApp);
  }

  // A table whose `txn` records expire (delta.setTransactionRetentionDuration) would
  // forget where the stream took the other writer's rows over while they are still
  // there: every commit records it again.
  void RefreshTakeoverRecords(delta::TableWriter* writer) const {
    if (snapshot_ == nullptr || !snapshot_->properties().set_transaction_retention_ms) {
      return;
    }
    for (const auto& [network, block] : state_.takeover_blocks) {
      const std::string record = state_.legacy_takeovers.count(network) != 0
                                     ? LegacyTakeoverAppId(app_id_, network)
                                     : TakeoverAppId(app_id_, network);
      writer->AddTransactionRecord(
          delta::SetTransaction{record, static_cast<int64_t>(block), {}});
    }
  }

  // Commit a writer with the stream's next txn version and move the snapshot forward.
  // `committed`: the ranges the commit records, checked against what the table holds when
  // another writer committed right after it (a restore that landed after this commit).
  // `cursor_log`: what the stream has recorded after the commit, written to the log
  // when the table keeps the stream's cursor there.
  arrow::Status Finish(delta::TableWriter* writer,
                       const std::vector<amp::BlockRange>* committed,
                       CursorLog cursor_log) {
    const int64_t next = state_.txn_version.value_or(0) + 1;
    writer->SetAppTransaction(delta::SetTransaction{app_id_, next, {}});
    RefreshTakeoverRecords(writer);
    if (CursorInLog() && (!cursor_log.empty() || HasCursorDomain())) {
      writer->SetDomainMetadata(CursorDomain(app_id_, cursor_log));
    }
    // The files that hold this stream's recorded progress (the read snapshot's files with
    // its tag): if a concurrent commit takes any back (a restore), the stream must resume
    // from the table, not go on past a hole. They are collected only if someone else
    // committed meanwhile.
    if (snapshot_ != nullptr) writer->WatchRemovals({}, RecordTagKeys(app_id_));
    auto written = writer->Commit();
    if (!written.ok()) {
      if (HasSubcode(written.status(), delta::kConcurrentApp)) {
        return written.status().WithMessage(
            "another loader is writing stream ", app_id_, " into this table (",
            written.status().message(), "); this loader stops");
      }
      // Other conflicts (a compaction or restore touched the same files) are retried from
      // the table's state by the caller.
      return written.status();
    }
    state_.txn_version = next;
    state_.cursor_log = std::move(cursor_log);
    ++commits_;
    last_written_ = *written;
    // The load's table properties went into its first commit; later commits must not set
    // them again over a change someone made meanwhile.
    write_.configuration.clear();
    const delta::Version committed_version = written->commit.version;
    if (const auto& after = written->commit.snapshot_after;
        after != nullptr && after->version() == committed_version) {
      // A checkpoint commit built the new version already: only look for later commits.
      ARROW_ASSIGN_OR_RAISE(snapshot_, after->Update());
    } else if (snapshot_ != nullptr) {
      ARROW_ASSIGN_OR_RAISE(snapshot_, snapshot_->Update());
    } else {
      ARROW_ASSIGN_OR_RAISE(snapshot_, delta::Snapshot::Load(store_));
    }
    if (committed != nullptr && snapshot_->version() > committed_version) {
      // Someone committed right after this commit: if the table now records less progress
      // than this commit made, that commit took it back; if it records more, it gave back
      // blocks taken earlier (a restore to a later version), which must not be loaded
      // again.
      ARROW_ASSIGN_OR_RAISE(
          auto now, ReadStreamState(snapshot_.get(), app_id_, options_.block_column));
      const amp::Cursor cursor = now.ResumeCursor();
      std::map<std::string, uint64_t> newest;
      for (const auto& range : *committed) {
        newest[range.network] = std::max(newest[range.network], range.end);
      }
      for (const auto& [network, end] : newest) {
        auto it = cursor.find(network);
        if (it == cursor.end() || it->second.number != end) {
          return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError,
                           "a commit after version ", committed_version,
                           " changed the "
                           "progress recorded for ",
                           network, " (block ", end, " committed, ",
                           it == cursor.end() ? std::string("none")
                                              : std::to_string(it->second.number),
                           " recorded now: a restore or delete)")
              .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                        delta::kRolledBack));
        }
      }
    }
    return arrow::Status::OK();
  }

  // The stream records its cursor in the log when asked to or when the table has the
  // feature that needs anyway.
  bool CursorInLog() const {
    return config_.state.cursor_in_log ||
           (snapshot_ != nullptr &&
            delta::HasWriterFeature(snapshot_->protocol(),
                                    delta::TableFeature::kDomainMetadata));
  }

  bool HasCursorDomain() const {
    return snapshot_ != nullptr &&
           snapshot_->domain_metadata().count(CursorDomainName(app_id_)) != 0;
  }

  void Report(const LoadResult& result) const {
    if (options_.on_result) options_.on_result(result);
  }

  // What undoing a reorg removes.
  struct UndoPlan {
    // The stream's own microbatches and spans the forks invalidate.
    Invalidation undo;
    // Forks on a network taken over from another writer, which also reach its
    // (untagged) rows.
    std::vector<amp::BlockRange> foreign_forks;
    // Where each network's undo starts: a microbatch a fork falls in goes whole.
    std::map<std::string, uint64_t> undo_from;
    // The stream's rows whose tags another engine's compaction dropped, found by block
    // number from here (never below the stream's first block: those are not its own).
    std::map<std::string, uint64_t> untagged_undo;

    bool empty() const {
      return undo.empty() && foreign_forks.empty() && untagged_undo.empty();
    }
  };

  // Remove the rows of every recorded microbatch a reorg invalidates, in one commit.
  // Return true when that removed blocks before a fork (a span reaching it goes whole),
  // which the server does not send again on this connection.
  arrow::Result<bool> Undo(const std::vector<amp::BlockRange>& invalidated) {
    const auto start = Clock::now();
    ARROW_RETURN_NOT_OK(RefreshAsSoleWriter());
    ARROW_ASSIGN_OR_RAISE(const UndoPlan plan, PlanUndo(invalidated));
    LoadResult reorg;
    reorg.table_name = result_->table_name;
    reorg.success = true;
    reorg.is_reorg = true;
    for (const auto& fork : invalidated) {
      reorg.invalidation_ranges.push_back({fork.network, fork.start, fork.end});
    }
    if (plan.empty() || snapshot_ == nullptr) {
      Report(reorg);  // nothing of it was committed
      telemetry::ReorgUndone(result_->table_name,
                             snapshot_ != nullptr ? snapshot_->version() : -1,
                             amp::NetworkSpansText(invalidated), 0, 0, 0);
      return false;
    }
    ARROW_ASSIGN_OR_RAISE(const UndoStaged staged, CommitUndo(plan, invalidated));
    reorg.rows_loaded = 0;
    reorg.duration = std::chrono::duration<double>(Clock::now() - start).count();
    reorg.metadata["table_version"] = static_cast<int64_t>(snapshot_->version());
    reorg.metadata["rows_removed"] = static_cast<int64_t>(staged.rows_removed);
    reorg.metadata["files_touched"] = static_cast<int64_t>(staged.files_touched);
    reorg.metadata["files_rewritten"] = static_cast<int64_t>(staged.files_rewritten);
    reorg.metadata["files_marked"] = static_cast<int64_t>(staged.files_marked);
    rows_undone_ += staged.rows_removed;
    Report(reorg);
    telemetry::ReorgUndone(result_->table_name, snapshot_->version(),
                           amp::NetworkSpansText(invalidated), staged.rows_removed,
                           staged.files_touched, reorg.duration);
    // state_ is stale now; every reader of it (the next undo, a reconnect) refreshes.
    return UndidBelowFork(plan, invalidated);
  }

  // Re-read the table, refusing when this stream's progress was taken back or another
  // loader of the stream committed since our last commit: never adopt its progress
  // silently (the one-loader-per-stream guarantee).
  arrow::Status RefreshAsSoleWriter() {
    const auto expected = state_.txn_version;
    const auto before = snapshot_;
    ARROW_RETURN_NOT_OK(Refresh());
    ARROW_RETURN_NOT_OK(CheckProgressKept(before.get(), snapshot_.get(), app_id_));
    if (state_.txn_version == expected) return arrow::Status::OK();
    return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::Invalid,
                     "another loader is writing stream ", app_id_,
                     " into this table (its txn moved to ",
                     state_.txn_version.value_or(0), "); this loader stops")
        .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                  delta::kConcurrentApp));
  }

  arrow::Result<UndoPlan> PlanUndo(
      const std::vector<amp::BlockRange>& invalidated) const {
    UndoPlan plan;
    plan.undo = Invalidate(state_, invalidated);
    for (const auto& fork : invalidated) {
      if (state_.takeover_blocks.count(fork.network) != 0)
        plan.foreign_forks.push_back(fork);
      uint64_t from = fork.start;
      for (const auto& range : state_.Recorded(fork.network)) {
        if (range.end >= fork.start) from = std::min(from, range.start);
      }
      auto [it, fresh] = plan.undo_from.try_emplace(fork.network, from);
      if (!fresh) it->second = std::min(it->second, from);
    }
    for (const auto& [network, from] : plan.undo_from) {
      auto owned = state_.untagged_from.find(network);
      if (owned == state_.untagged_from.end() ||
          state_.takeover_blocks.count(network) != 0) {
        continue;
      }
      ARROW_RETURN_NOT_OK(CheckUntaggedUndoable(network, from));
      plan.untagged_undo[network] = std::max(from, owned->second);
    }
    return plan;
  }

  // Block numbers tell the stream's untagged rows apart only when no other stream
  // records its cursor in the table and the stream covers one network.
  arrow::Status CheckUntaggedUndoable(const std::string& network, uint64_t from) const {
    if (state_.other_streams > 0) {
      return InvalidInputError("cannot undo the reorg of ", network, " from block ", from,
                               ": files without this stream's tags (another engine "
                               "compacted them) may hold rows of the ",
                               state_.other_streams,
                               " other stream(s) recording their cursor in this table, "
                               "which block numbers cannot tell apart");
    }
    if (state_.cursor_log.size() > 1) {
      return InvalidInputError("cannot undo the reorg of ", network, " from block ", from,
                               ": files without this stream's tags (another engine "
                               "compacted them) hold its rows, and the stream covers ",
                               state_.cursor_log.size(),
                               " networks, whose rows block numbers cannot tell apart");
    }
    return arrow::Status::OK();
  }

  // Remove what `plan` names in one DELETE commit with the stream's new cursor.
  arrow::Result<UndoStaged> CommitUndo(const UndoPlan& plan,
                                       const std::vector<amp::BlockRange>& invalidated) {
    delta::TableWriteOptions write = write_;
    for (const auto& fork : plan.foreign_forks) {
      // The stream now owns the blocks from the fork on: a resume before it reloads them.
      if (fork.start < state_.takeover_blocks.at(fork.network)) {
        write.transaction_records.push_back(delta::SetTransaction{
            TakeoverAppId(app_id_, fork.network), static_cast<int64_t>(fork.start), {}});
      }
    }
    write.mode = delta::SaveMode::kAppend;
    write.read_snapshot = snapshot_;
    write.rewrites_rows = true;
    write.operation = "DELETE";
    write.operation_parameters = {
        {"predicate", "[\"reorg: " + amp::NetworkSpansText(invalidated) + "\"]"}};
    ARROW_ASSIGN_OR_RAISE(auto writer,
                          delta::TableWriter::Open(store_, snapshot_->schema(), write));
    ARROW_ASSIGN_OR_RAISE(UndoStaged staged,
                          StageUndoInto(writer.get(), plan, invalidated));
    ARROW_RETURN_NOT_OK(Finish(writer.get(), &staged.surviving,
                               CursorLogAfterUndo(staged, plan.undo_from)));
    return staged;
  }

  // Stage in `writer` (opened on snapshot_, rewriting rows) the removal of what `plan`
  // names: the stream's microbatches and spans, and its rows without tags.
  arrow::Result<UndoStaged> StageUndoInto(
      delta::TableWriter* writer, const UndoPlan& plan,
      const std::vector<amp::BlockRange>& invalidated) {
    ARROW_ASSIGN_OR_RAISE(UndoStaged staged,
                          StageUndo(*snapshot_, app_id_, state_, invalidated, plan.undo,
                                    options_.block_column, writer));
    std::vector<uint64_t> foreign_from;
    for (const auto& fork : plan.foreign_forks) foreign_from.push_back(fork.start);
    for (const auto& [network, from] : plan.untagged_undo) foreign_from.push_back(from);
    for (const uint64_t from : foreign_from) {
      ARROW_ASSIGN_OR_RAISE(
          const int64_t removed,
          StageForeignUndo(*snapshot_, options_.block_column, from, writer));
      staged.rows_removed += removed;
    }
    return staged;
  }

  // Whether the undo removed rows below a fork (an untagged reach or a span straddling
  // it), which the server does not send again: the stream then resumes from the table.
  static bool UndidBelowFork(const UndoPlan& plan,
                             const std::vector<amp::BlockRange>& invalidated) {
    for (const auto& fork : invalidated) {
      auto it = plan.untagged_undo.find(fork.network);
      if (it != plan.untagged_undo.end() && it->second < fork.start) return true;
    }
    return std::any_of(
        plan.undo.spans.begin(), plan.undo.spans.end(), [&](const auto& span) {
          return std::any_of(
              invalidated.begin(), invalidated.end(), [&](const auto& fork) {
                return fork.network == span.network && span.start < fork.start;
              });
        });
  }

  // What the stream has recorded after an undo from `undo_from` (per network): each
  // network's newest surviving range; where the stream's rows without tags may reach
  // the removal, the block before it with a hash no chain has, so that the server sends
  // it again and its rows are replaced (stream_cursor_log.h).
  CursorLog CursorLogAfterUndo(const UndoStaged& staged,
                               const std::map<std::string, uint64_t>& undo_from) const {
    CursorLog log;
    for (const auto& [network, cursor] : state_.cursor_log) {
      auto from = undo_from.find(network);
      if (from == undo_from.end()) {
        log[network] = cursor;
        continue;
      }
      std::optional<amp::BlockRange> last;
      for (const auto& range : staged.surviving) {
        if (range.network == network) last = range;
      }
      const bool untagged = state_.untagged_from.count(network) != 0;
      if (untagged && cursor.first < from->second &&
          (!last || last->end + 1 < from->second)) {
        last = UnknownHashRange(network, from->second - 1);
      }
      if (last) log[network] = NetworkCursor{cursor.first, *last};
    }
    return log;
  }

  // Compact files that no reorg can reach any more, every so many commits.
  arrow::Status MaybeCompact() {
    const int64_t every = options_.stream_compact_every_commits;
    if (!config_.optimize_after_write || every <= 0 || commits_ % every != 0) {
      return arrow::Status::OK();
    }
    const auto head = head_;
    const uint64_t window = options_.stream_reorg_window_blocks;
    delta::OptimizeOptions optimize;
    if (config_.file_size_hint) optimize.target_size = *config_.file_size_hint;
    optimize.files.codec = write_.files.codec;
    optimize.eligible = [head, window, app_id = app_id_](const delta::Add& file) {
      if (!file.tags) return true;
      auto record = ReadFileRecord(file, app_id);
      if (!record.ok()) return false;
      for (const auto* list : {&record->ranges, &record->spans}) {
        for (const auto& range : *list) {
          auto it = head.find(range.network);
          if (it == head.end() || range.end + window > it->second) return false;
        }
      }
      return true;
    };
    // Spans are undone by block number: only a table with the block column gets them.
    const auto block_field =
        snapshot_ == nullptr ? nullptr
                             : snapshot_->schema()->GetFieldByName(options_.block_column);
    if (block_field != nullptr && arrow::is_integer(block_field->type()->id())) {
      optimize.merge_tags = [app_id =
                                 app_id_](const std::vector<const delta::Add*>& files) {
        return MergeStreamTags(files, app_id);
      };
    }
    auto compacted = snapshot_ != nullptr ? delta::Optimize(snapshot_, optimize)
                                          : delta::Optimize(store_, optimize);
    if (!compacted.ok()) {
      AMPDELTA_LOG_WARN("stream compaction failed (the stream goes on): ",
                        compacted.status().message());
    } else if (compacted->version) {
      result_->metadata["compactions"] = static_cast<int64_t>(++compactions_);
      telemetry::Compacted(result_->table_name, *compacted->version,
                           compacted->files_removed, compacted->files_added);
    }
    return arrow::Status::OK();
  }

  // Drop uncommitted rows (their microbatches are re-sent after reconnecting).
  void Abandon() {
    if (writer_ != nullptr) (void)writer_->Abort();
    writer_.reset();
    reached_.clear();  // what the next connection completes, not what this one saw
    group_.Clear();
    // The table keeps its rows of blocks a replacement did not get to commit.
    pending_replace_.clear();
  }

 public:
  void Summarise() const {
    result_->rows_loaded = rows_loaded_;
    result_->metadata["operation"] = std::string("load_stream");
    result_->metadata["app_id"] = app_id_;
    result_->metadata["commits"] = static_cast<int64_t>(commits_);
    result_->metadata["reorgs"] = static_cast<int64_t>(reorgs_);
    result_->metadata["rows_undone"] = static_cast<int64_t>(rows_undone_);
    if (snapshot_ != nullptr)
      result_->metadata["table_version"] = static_cast<int64_t>(snapshot_->version());
    if (!head_.empty()) {
      std::string head;
      for (const auto& [network, block] : head_) {
        head += (head.empty() ? "" : ",") + network + ":" + std::to_string(block);
      }
      result_->metadata["head"] = head;
    }
  }

 private:
  amp::Client& client_;
  const std::string sql_;
  const DeltaLakeConfig& config_;
  const LoadOptions& options_;
  std::shared_ptr<storage::ObjectStore> store_;
  // Not const: its table properties are cleared once the first commit has set them.
  delta::TableWriteOptions write_;
  LoadResult* result_;
  const std::string app_id_;

  std::shared_ptr<const delta::Snapshot> snapshot_;
  StreamState state_;
  std::unique_ptr<delta::TableWriter> writer_;
  CommitGroup group_;
  std::map<std::string, uint64_t> head_;
  // The newest block of each network completed on the current connection (--until-block).
  std::map<std::string, uint64_t> reached_;
  int64_t rows_loaded_ = 0;
  int64_t rows_undone_ = 0;
  int64_t commits_ = 0;
  int64_t failures_reset_at_ = 0;
  int64_t reorgs_ = 0;
  int64_t reconnects_ = 0;
  int64_t rollbacks_ = 0;
  bool failed_mid_stream_ = false;
  bool stall_warned_ = false;
  int64_t stalls_ = 0;
  int64_t compactions_ = 0;
  // Blocks of the table a replay sends again unchecked (OnReplace): their rows go in the
  // commit that reaches their end.
  std::vector<amp::BlockRange> pending_replace_;
  delta::TableWriteResult last_written_;  // the last commit Finish() made
};

}  // namespace

LoadResult LoadStream(amp::Client& client, const std::string& sql,
                      const DeltaLakeConfig& config, const LoadOptions& options) {
  return internal::RunLoad(config, options, [&](LoadResult* result) -> arrow::Status {
    if (options.mode != LoadMode::kAppend) {
      return InvalidInputError("streaming loads append (mode '",
                               LoadModeName(options.mode), "' is for batch loads)");
    }
    if (options.with_reorg_detection && !config.state.store_batch_id) {
      return InvalidInputError(
          "undoing reorgs needs the ", kBatchIdColumn,
          " column: set state.store_batch_id=true or with_reorg_detection=false");
    }
    ARROW_ASSIGN_OR_RAISE(auto write, internal::WriteOptions(config, options));
    ARROW_ASSIGN_OR_RAISE(auto store, internal::OpenStore(config, options, result));
    // One write lease for the stream's life: each commit's files are written under it.
    ARROW_ASSIGN_OR_RAISE(write.lease, delta::WriteLease::Acquire(store));
    if (config.state.cursor_in_log)
      write.writer_features.push_back(delta::TableFeature::kDomainMetadata);
    StreamLoad load(client, sql, config, options, store, std::move(write), result);
    arrow::Status ran = load.Run();
    load.Summarise();
    return ran;
  });
}

}  // namespace ampdelta::loader
