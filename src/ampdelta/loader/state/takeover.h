#pragma once

/// \file takeover.h
/// \brief A stream taking over a table whose rows another writer loaded (the Python SDK,
/// a batch load, another engine): they carry no block-range tags of any stream, so the
/// stream's own state cannot say which blocks they hold. Without a takeover the stream
/// would start at the dataset's first block and load them again.
///
/// A takeover commits, with the stream's first `txn`, a record `txn` whose app id is
/// TakeoverAppId(stream, network) and whose version is the first block the stream owns
/// on that network; rows of untagged ("foreign") files from that block on are removed
/// in the same commit. Until the stream records ranges of its own, it resumes with that
/// block as its cursor (and a hash no chain has: the server sends the block again), and
/// a reorg at or below it removes foreign rows by block number.
///
/// Tables taken over before ampdelta removed the seed block in the takeover commit carry
/// a legacy record (LegacyTakeoverAppId): its stream resumes before the block, and
/// replaces the re-sent block as the undo of a rewind.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/table_writer.h"

namespace ampdelta::loader {

/// \brief The app id of a stream's takeover record on `network`.
std::string TakeoverAppId(const std::string& stream_app_id, const std::string& network);
/// \brief The app id of a takeover record older ampdelta versions wrote.
std::string LegacyTakeoverAppId(const std::string& stream_app_id,
                                const std::string& network);
/// \brief Return true when `app_id` is a takeover record of stream `stream_app_id`.
bool IsTakeoverAppId(const std::string& stream_app_id, const std::string& app_id);

/// \brief The first block the stream owns per network, from its takeover records (the
/// current record when a network has both).
std::map<std::string, uint64_t> TakeoverBlocks(const delta::Snapshot& snapshot,
                                               const std::string& stream_app_id);

/// \brief The networks whose only takeover record is a legacy one.
std::set<std::string> LegacyTakeovers(const delta::Snapshot& snapshot,
                                      const std::string& stream_app_id);

/// \brief Return true when some stream has taken the table over (a takeover record of
/// any app id): the untagged rows are then that stream's, not another one's to take.
bool HasTakeoverRecord(const delta::Snapshot& snapshot);

/// \brief Return true when a live file that holds rows carries no stream's block-range
/// tags (written by something other than an ampdelta stream), nor the tag `except_tag`
/// (a backfill's, when telling its rows from other writers').
bool IsForeignFile(const delta::Add& file, const std::string& except_tag = {});

/// \brief Count the rows of foreign files (files without statistics count as one).
int64_t ForeignRows(const delta::Snapshot& snapshot, const std::string& except_tag = {});

/// \brief The lowest and highest value of integer column `column` over foreign files,
/// from their statistics (files without them are read); nullopt when they hold no rows.
arrow::Result<std::optional<std::pair<int64_t, int64_t>>> ForeignBlockSpan(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::string& except_tag = {});

/// \brief Count the rows of the live files `counted` selects whose integer column
/// `column` lies in each of `spans` (inclusive), in the spans' order. A file wholly
/// inside one span counts its statistics' rows; files the statistics place outside every
/// span are not read; the others have that column read (deletion vectors applied).
arrow::Result<std::vector<int64_t>> RowsIn(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::vector<std::pair<uint64_t, uint64_t>>& spans,
    const std::function<bool(const delta::Add&)>& counted);

/// \brief RowsIn over the foreign files (IsForeignFile).
arrow::Result<std::vector<int64_t>> ForeignRowsIn(
    const delta::Snapshot& snapshot, const std::string& column,
    const std::vector<std::pair<uint64_t, uint64_t>>& spans,
    const std::string& except_tag = {});

/// \brief A file's [min, max] of integer column `column` (the name statistics use: the
/// physical name under column mapping) from its statistics; nullopt when they do not say.
std::optional<std::pair<int64_t, int64_t>> StatsBlockSpan(const delta::Add& file,
                                                          const std::string& column);

/// \brief Stage in `writer` the removal of foreign rows whose `column` lies in
/// [`from`, `to`]: files wholly inside are removed, files straddling a bound rewritten
/// with their other rows (or, on tables with deletion vectors, kept with these marked).
/// \return the number of rows removed
arrow::Result<int64_t> StageForeignUndo(const delta::Snapshot& snapshot,
                                        const std::string& column, uint64_t from,
                                        delta::TableWriter* writer,
                                        uint64_t to = UINT64_MAX);

/// \brief Learn the networks a streaming query covers from its first message that
/// names block ranges, then cancel it; `stop` turning true cancels the wait.
arrow::Result<std::vector<std::string>> ProbeNetworks(
    amp::Client& client, const std::string& sql, const std::atomic<bool>* stop = nullptr);

}  // namespace ampdelta::loader
