#pragma once

/// \file stream_cursor_log.h
/// \brief A stream's cursor recorded in the table's log as domain metadata (domain
/// `ampdelta.stream.<app id>`), committed with the data. The block-range tags on data
/// files (stream_state.h) say which file holds which microbatch, but another engine's
/// compaction (Spark's OPTIMIZE) writes files without them: the cursor in the log still
/// says how far the stream got, and that the untagged rows from its first block on are
/// the stream's (a reorg into them is undone by block number).
///
/// The record is small and the same size at every commit: per network, the first block
/// the stream recorded and its newest range.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"

namespace ampdelta::loader {

/// \brief What the log records of one network.
struct NetworkCursor {
  /// The first block the stream recorded on the network.
  uint64_t first = 0;
  /// Its newest recorded range (the resume cursor). After an undo that reached rows
  /// whose ranges are unknown, a range ending before the fork with a hash no chain has,
  /// so the server sends that block again and the rewind is undone by block number.
  amp::BlockRange last;

  bool operator==(const NetworkCursor&) const = default;
};

/// \brief The record, per network.
using CursorLog = std::map<std::string, NetworkCursor>;

/// \brief The domain of stream `app_id`'s record.
std::string CursorDomainName(const std::string& app_id);

/// \brief Read stream `app_id`'s record; nullopt when the log has none (or it was
/// removed). Errors: kCorruptLog (a record that does not parse).
arrow::Result<std::optional<CursorLog>> ReadCursorLog(const delta::Snapshot& snapshot,
                                                      const std::string& app_id);

/// \brief The domainMetadata action that records `log` (removed when it is empty).
delta::DomainMetadata CursorDomain(const std::string& app_id, const CursorLog& log);

/// \brief Return `log` after a commit that recorded `ranges`.
CursorLog AdvanceCursorLog(CursorLog log, const std::vector<amp::BlockRange>& ranges);

/// \brief A range at `block` with a hash no chain has (see NetworkCursor::last).
amp::BlockRange UnknownHashRange(const std::string& network, uint64_t block);

}  // namespace ampdelta::loader
