#include "ampdelta/amp/stream_interpreter.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "ampdelta/util/status.h"

namespace ampdelta::amp {

void StreamInterpreter::SeedCompleted(const std::vector<BlockRange>& ranges) {
  for (const auto& range : ranges) Complete(&networks_[range.network], range);
}

void StreamInterpreter::SeedCursor(const Cursor& cursor) {
  for (const auto& [network, entry] : cursor) {
    BlockRange range;
    range.network = network;
    range.start = entry.number;
    range.end = entry.number;
    range.hash = entry.hash;
    Complete(&networks_[network], range);
  }
}

void StreamInterpreter::SeedHistory(const std::vector<BlockRange>& ranges) {
  for (const auto& range : ranges) networks_[range.network].history[range.start] = range;
}

namespace {

using History = std::map<uint64_t, BlockRange>;

// The hash of `block` as the history knows it: a range's end hash, or the prev_hash of
// the range after it.
std::optional<std::string> HashAt(const History& history, uint64_t block) {
  auto after = history.upper_bound(block);
  if (after != history.begin()) {
    const BlockRange& range = std::prev(after)->second;
    if (range.end == block && !range.hash.empty()) return range.hash;
  }
  if (after != history.end() && after->first == block + 1 &&
      !after->second.prev_hash.empty())
    return after->second.prev_hash;
  return std::nullopt;
}

// A hash of `range` (its end's, or its parent's) differs from the history's.
bool Contradicts(const History& history, const BlockRange& range) {
  const auto end = HashAt(history, range.end);
  if (end && !range.hash.empty() && *end != range.hash) return true;
  if (range.start == 0 || range.prev_hash.empty()) return false;
  const auto parent = HashAt(history, range.start - 1);
  return parent && *parent != range.prev_hash;
}

// `range` ends at a block whose hash the history holds, with that hash.
bool Verified(const History& history, const BlockRange& range) {
  const auto end = HashAt(history, range.end);
  return end && !range.hash.empty() && *end == range.hash;
}

// `start` begins a range of the history (or lies outside it): replacing the history from
// there removes no row before it.
bool Aligned(const History& history, uint64_t start) {
  return history.empty() || history.count(start) != 0 || start < history.begin()->first ||
         start > history.rbegin()->second.end;
}

}  // namespace

void StreamInterpreter::Complete(NetworkState* state, const BlockRange& range) {
  state->open.reset();
  // A replayed microbatch is history already: it does not complete again.
  if (std::exchange(state->open_is_replay, false)) return;
  if (!state->completed.empty() && state->completed.back() == range) return;
  state->completed.push_back(range);
  while (state->completed.size() > options_.history_limit) state->completed.pop_front();
}

arrow::Result<StreamEvent> StreamInterpreter::Accept(const BatchMetadata& metadata,
                                                     int64_t num_rows) {
  StreamEvent event;
  event.ranges = metadata.ranges;
  if (metadata.ranges_complete) {
    event.kind = StreamEvent::Kind::kMicrobatchEnd;
  } else if (num_rows > 0) {
    event.kind = StreamEvent::Kind::kData;
  } else {
    event.kind = StreamEvent::Kind::kKeepAlive;
  }
  for (const auto& range : metadata.ranges) {
    ARROW_RETURN_NOT_OK(AcceptRange(range, &event));
  }
  ARROW_RETURN_NOT_OK(ReconcileReplays(metadata.ranges, &event));
  if (metadata.ranges_complete && !event.partial_reorg) {
    for (const auto& range : metadata.ranges) Complete(&networks_[range.network], range);
  }
  return event;
}

arrow::Status StreamInterpreter::AcceptRange(const BlockRange& range,
                                             StreamEvent* event) {
  NetworkState& state = networks_[range.network];
  if (state.open) {
    if (*state.open == range) {
      event->replayed = event->replayed || state.open_is_replay;
      return arrow::Status::OK();
    }
    return ProtocolError("received ", range.ToString(), " while microbatch ",
                         state.open->ToString(),
                         " was still open (no ranges_complete marker)");
  }
  if (state.replaying) return AcceptReplayed(&state, range, event);
  if (state.completed.empty()) {
    state.open = range;
    state.moved_forward = true;
    return arrow::Status::OK();
  }
  const BlockRange& last = state.completed.back();
  if (range == last) {
    // The same microbatch again (a replay); data already received for it is a duplicate.
    event->replayed = true;
    state.open = range;
    state.open_is_replay = true;
    return arrow::Status::OK();
  }
  if (range.start == last.end + 1) {
    if (!range.prev_hash.empty() && !last.hash.empty() && range.prev_hash != last.hash) {
      return ProtocolError("hash mismatch: ", range.ToString(), " has prev_hash ",
                           range.prev_hash, " but block ", last.end, " has hash ",
                           last.hash);
    }
    state.open = range;
    state.moved_forward = true;
    return arrow::Status::OK();
  }
  if (range.start > last.end + 1) {
    return ProtocolError("gap in stream: ", range.ToString(), " follows ",
                         last.ToString(), " (blocks ", last.end + 1, "..",
                         range.start - 1, " missing)");
  }
  if (options_.replays_from_start && !state.moved_forward && !state.history.empty()) {
    state.replaying = true;
    return AcceptReplayed(&state, range, event);
  }
  return HandleBackwards(&state, range, event);
}

arrow::Status StreamInterpreter::ReconcileReplays(const std::vector<BlockRange>& ranges,
                                                  StreamEvent* event) {
  // A message is skipped only whole: when one network's range is new, replaced or
  // reorged, the rows of the others' ranges it repeats are loaded again too, replacing
  // what the table holds of them (skipping the message would drop the first network's
  // rows).
  if (!event->replayed || ranges.size() < 2) return arrow::Status::OK();
  const bool all_replayed = std::all_of(ranges.begin(), ranges.end(), [&](const auto& r) {
    return networks_[r.network].open_is_replay;
  });
  if (all_replayed && event->replaces.empty() && !event->is_reorg()) {
    return arrow::Status::OK();
  }
  event->replayed = false;
  for (const auto& range : ranges) {
    NetworkState& state = networks_[range.network];
    if (!state.open_is_replay) continue;
    uint64_t end = range.end;
    if (!state.completed.empty()) end = std::max(end, state.completed.back().end);
    if (!state.history.empty()) end = std::max(end, state.history.rbegin()->second.end);
    const bool inside = std::any_of(
        state.completed.begin(), state.completed.end(), [&](const BlockRange& done) {
          return done.start < range.start && done.end >= range.start;
        });
    if (!Aligned(state.history, range.start) || inside) {
      return ProtocolError(
          "the stream sends ", range.ToString(),
          " again beside another network's new blocks, from inside a "
          "microbatch the table holds: its rows cannot be replaced exactly "
          "(the table is left as it is)");
    }
    state.open_is_replay = false;
    state.replaying = false;
    state.moved_forward = true;
    std::erase_if(state.completed,
                  [&](const BlockRange& done) { return done.end >= range.start; });
    BlockRange replaced;
    replaced.network = range.network;
    replaced.start = range.start;
    replaced.end = end;
    event->replaces.push_back(replaced);
  }
  return arrow::Status::OK();
}

arrow::Status StreamInterpreter::AcceptReplayed(NetworkState* state,
                                                const BlockRange& range,
                                                StreamEvent* event) {
  const uint64_t history_end = state->history.rbegin()->second.end;
  if (range.start > history_end) {
    // Past the history: the stream goes on from its last range, as any other.
    state->replaying = false;
    return AcceptRange(range, event);
  }
  if (state->replayed_to && range == *state->replayed_to) {
    // The same microbatch (or its marker) again: still skipped.
    event->replayed = true;
    state->open = range;
    state->open_is_replay = true;
    return arrow::Status::OK();
  }
  const bool continues =
      !state->replayed_to || range.start == state->replayed_to->end + 1;
  if (!continues || Contradicts(state->history, range)) {
    // A jump or a rewind inside the replay, or a hash the history holds contradicted: a
    // reorg (or a gap) as on any stream.
    state->replaying = false;
    state->moved_forward = true;
    if (state->replayed_to && range.start > state->replayed_to->end + 1) {
      return ProtocolError("gap in stream: ", range.ToString(), " follows ",
                           state->replayed_to->ToString());
    }
    return HandleBackwards(state, range, event);
  }
  if (range.end <= history_end && Verified(state->history, range)) {
    event->replayed = true;
    state->open = range;
    state->open_is_replay = true;
    state->replayed_to = range;
    return arrow::Status::OK();
  }
  state->replaying = false;
  state->moved_forward = true;
  if (!Aligned(state->history, range.start)) {
    // Replacing from inside a range would lose its rows before `start`, which the server
    // does not send again; nothing contradicts them either. The table stays as it is.
    return ProtocolError(
        "the stream sends ", range.ToString(),
        " again from inside a microbatch the table holds, and no hash the table recorded "
        "checks it: it can be neither skipped nor replaced exactly, so the table is left "
        "as it is (a stream that resumes after the table's cursor, ampdelta.Client's, "
        "has "
        "no such replay)");
  }
  BlockRange replaced;
  replaced.network = range.network;
  replaced.start = range.start;
  replaced.end = history_end;
  event->replaces.push_back(replaced);
  std::erase_if(state->completed,
                [&](const BlockRange& done) { return done.end >= range.start; });
  state->moved_forward = true;
  state->open = range;
  return arrow::Status::OK();
}

arrow::Status StreamInterpreter::HandleBackwards(NetworkState* state,
                                                 const BlockRange& range,
                                                 StreamEvent* event) {
  const BlockRange& last = state->completed.back();
  if (!range.prev_hash.empty() && range.prev_hash == last.hash) {
    return ProtocolError("invalid reorg: ", range.ToString(), " moves back from ",
                         last.ToString(), " but its prev_hash equals that range's hash");
  }
  const uint64_t invalid_end = std::max(range.end, last.end);
  // The earliest completed range that the fork reaches decides where undo starts.
  auto first_hit =
      std::find_if(state->completed.begin(), state->completed.end(),
                   [&](const BlockRange& r) { return r.end >= range.start; });
  uint64_t invalid_start = range.start;
  bool partial = false;
  std::optional<Cursor> resume;
  if (first_hit != state->completed.end() && first_hit->start < range.start) {
    // The fork is strictly inside a completed microbatch: its rows before the fork will
    // not be re-sent, so the whole range is invalidated and the stream must resume
    // before it (amp docs/reorgs.md).
    partial = true;
    invalid_start = first_hit->start;
    // Resume after the block before the straddling range, when that block is one the
    // server has served: a cursor on a block it lacks (below the dataset's first block,
    // or before genesis) makes ampd wait for ever. Without one the network starts over
    // from the server's earliest block (no cursor entry for it).
    resume = Cursor{};
    if (first_hit != state->completed.begin() && first_hit->start > 0) {
      std::string before_hash = first_hit->prev_hash;
      if (before_hash.empty()) before_hash = std::prev(first_hit)->hash;
      if (!before_hash.empty()) {
        (*resume)[range.network] = CursorEntry{first_hit->start - 1, before_hash};
      }
    }
  }
  state->completed.erase(first_hit, state->completed.end());

  BlockRange invalidated;
  invalidated.network = range.network;
  invalidated.start = invalid_start;
  invalidated.end = invalid_end;
  event->invalidated.push_back(invalidated);
  if (partial) {
    event->partial_reorg = true;
    event->resume_cursor = std::move(resume);
    // Nothing of this message may be applied: the consumer reconnects from the cursor,
    // and the next stream continues from the block before the straddling range.
    auto cursor_entry = event->resume_cursor->find(range.network);
    if (state->completed.empty() && cursor_entry != event->resume_cursor->end()) {
      const CursorEntry& entry = cursor_entry->second;
      BlockRange anchor;
      anchor.network = range.network;
      anchor.start = entry.number;
      anchor.end = entry.number;
      anchor.hash = entry.hash;
      state->completed.push_back(anchor);
    }
    return arrow::Status::OK();
  }
  state->open = range;
  return arrow::Status::OK();
}

Cursor StreamInterpreter::CompletedCursor() const {
  Cursor cursor;
  for (const auto& [network, state] : networks_) {
    if (!state.completed.empty()) {
      cursor[network] = {state.completed.back().end, state.completed.back().hash};
    }
  }
  return cursor;
}

std::optional<BlockRange> StreamInterpreter::OpenRange(const std::string& network) const {
  auto it = networks_.find(network);
  if (it == networks_.end()) return std::nullopt;
  return it->second.open;
}

}  // namespace ampdelta::amp
