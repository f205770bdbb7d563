#include "ampdelta/amp/stream_interpreter.h"

#include <algorithm>

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

void StreamInterpreter::Complete(NetworkState* state, const BlockRange& range) {
  state->open.reset();
  state->open_is_replay = false;
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
  if (state.completed.empty()) {
    state.open = range;
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
    return arrow::Status::OK();
  }
  if (range.start > last.end + 1) {
    return ProtocolError("gap in stream: ", range.ToString(), " follows ",
                         last.ToString(), " (blocks ", last.end + 1, "..",
                         range.start - 1, " missing)");
  }
  return HandleBackwards(&state, range, event);
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
