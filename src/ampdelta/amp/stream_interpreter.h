#pragma once

/// \file stream_interpreter.h
/// \brief A pure state machine that interprets the block ranges of an Amp stream.
///
/// Amp never flags a reorg: the client infers one when a microbatch starts at or below
/// the end of what it already received (amp-protocol.md §1.6). The interpreter validates
/// the hash chain, rejects gaps and hash mismatches as protocol errors, reports reorgs
/// with the ranges they invalidate, and flags partial reorgs, where the fork falls
/// strictly inside a completed microbatch whose earlier rows will not be re-sent. It does
/// no IO, so every scenario can be scripted in unit tests.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/amp/block_range.h"

namespace ampdelta::amp {

/// \brief What one message of the stream means.
struct StreamEvent {
  enum class Kind : uint8_t {
    /// Rows of an open microbatch.
    kData,
    /// A 0-row message inside a microbatch (keep-alive) or with no ranges.
    kKeepAlive,
    /// The `ranges_complete` marker: the microbatch(es) in `ranges` are complete.
    kMicrobatchEnd,
  };

  Kind kind = Kind::kKeepAlive;
  /// The message's ranges.
  std::vector<BlockRange> ranges;
  /// Ranges (network, start, end; no hashes) whose data must be undone before this
  /// message's data is applied. Non-empty means a reorg was detected.
  std::vector<BlockRange> invalidated;
  /// True when a fork fell strictly inside a completed microbatch: its rows before the
  /// fork will not be re-sent, so the consumer must reconnect from `resume_cursor`.
  bool partial_reorg = false;
  /// For a partial reorg, where to resume (the block before the straddling range). A
  /// network is missing from it when that block is unknown or was never served (the
  /// straddling range is the first one seen, e.g. a chain from genesis): resume that
  /// network from the server's earliest block.
  std::optional<Cursor> resume_cursor;
  /// True when the message belongs to a microbatch that already completed and is sent
  /// again (each of its messages, its marker included): a consumer skips it.
  bool replayed = false;
  /// A replay (Options::replays_from_start) that re-sends completed history without a
  /// hash to check it by (its end is no boundary the history knows, or it runs past the
  /// history's end): the history's ranges from `start` to `end` are to be replaced by
  /// what the stream sends from this message on. A consumer removes their rows in the
  /// commit that adds the replacement's rows up to `end`, so no reader ever sees them
  /// missing. Not a reorg: no hash the history holds was contradicted.
  std::vector<BlockRange> replaces;

  /// \brief Return true when this message reveals a reorg.
  bool is_reorg() const { return !invalidated.empty(); }
};

/// \brief Interpret a stream's metadata one message at a time. Thread-compatible.
class StreamInterpreter {
 public:
  /// \brief Tuning knobs.
  struct Options {
    /// Completed ranges kept per network to locate partial reorgs.
    size_t history_limit = 4096;
    /// The client starts every stream from the dataset's first block whatever the table
    /// holds (the Python SDK's streams, handed over: `amp-resume` is not theirs to send).
    /// A rewind into the history before the stream moved forward is then a replay: a
    /// microbatch whose end hash the history knows is skipped, one that contradicts a
    /// hash it knows is a reorg, and one it cannot check replaces the history from its
    /// start (StreamEvent::replaces).
    bool replays_from_start = false;
  };

  StreamInterpreter() : StreamInterpreter(Options{}) {}
  explicit StreamInterpreter(Options options) : options_(options) {}

  /// \brief Seed with ranges already completed (e.g. read back from a table), in order.
  void SeedCompleted(const std::vector<BlockRange>& ranges);

  /// \brief Seed with a resume cursor: each entry acts as a completed one-block range, so
  /// a server rewind below it shows up as a reorg.
  void SeedCursor(const Cursor& cursor);

  /// \brief With Options::replays_from_start: every range the table holds, in order, to
  /// check a replay against (beyond the `history_limit` ranges SeedCompleted keeps).
  void SeedHistory(const std::vector<BlockRange>& ranges);

  /// \brief Interpret one message.
  ///
  /// \param[in] metadata the message's parsed app_metadata
  /// \param[in] num_rows the number of rows it carried
  /// \return the event, or a kProtocolError for gaps, hash mismatches, invalid reorgs and
  ///   microbatches that change range without their completion marker
  arrow::Result<StreamEvent> Accept(const BatchMetadata& metadata, int64_t num_rows);

  /// \brief Return the cursor after the last completed microbatch of every network.
  Cursor CompletedCursor() const;

  /// \brief Return the open (incomplete) microbatch range of a network, if any.
  std::optional<BlockRange> OpenRange(const std::string& network) const;

 private:
  struct NetworkState {
    std::deque<BlockRange> completed;
    std::optional<BlockRange> open;
    // The open microbatch repeats the last completed one.
    bool open_is_replay = false;
    // A range of this stream completed after the history: a rewind is a reorg now.
    bool moved_forward = false;
    // SeedHistory's ranges by start, and whether a replay of them is being checked, up to
    // which of its ranges.
    std::map<uint64_t, BlockRange> history;
    bool replaying = false;
    std::optional<BlockRange> replayed_to;
  };

  arrow::Status AcceptRange(const BlockRange& range, StreamEvent* event);
  arrow::Status AcceptReplayed(NetworkState* state, const BlockRange& range,
                               StreamEvent* event);
  arrow::Status ReconcileReplays(const std::vector<BlockRange>& ranges,
                                 StreamEvent* event);
  arrow::Status HandleBackwards(NetworkState* state, const BlockRange& range,
                                StreamEvent* event);
  void Complete(NetworkState* state, const BlockRange& range);

  Options options_;
  std::map<std::string, NetworkState> networks_;
};

}  // namespace ampdelta::amp
