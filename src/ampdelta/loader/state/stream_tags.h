#pragma once

/// \file stream_tags.h
/// \brief What a stream records on a data file: the block ranges of the microbatches
/// whose rows it may hold (`add.tags`, a JSON array: a superset, merged as a set by
/// rewrites), the spans its own compaction coalesces them into, and the `_amp_batch_id`
/// its rows carry. stream_state.h reads a stream's state from them.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/delta/log/actions.h"

namespace ampdelta::loader {

/// The column every streamed row carries (the Python SDK's name and values).
inline constexpr const char* kBatchIdColumn = "_amp_batch_id";
/// The prefix of the `add.tags` key holding a file's block ranges; the key is
/// `ampdelta.blockRanges.<app id>` (RangesTagKey), so streams sharing a table never read
/// or undo each other's ranges.
inline constexpr const char* kRangesTag = "ampdelta.blockRanges";

/// The prefix of the `add.tags` key holding a compacted file's block spans: runs of
/// consecutive microbatch ranges coalesced into one range (first start, last end and
/// hash, first prev_hash) of at most kMaxSpanBlocks blocks. A span's rows are found by
/// block number, not by `_amp_batch_id` (its id names no microbatch).
inline constexpr const char* kSpansTag = "ampdelta.blockSpans";
/// The most blocks a span covers: a reorg into a span undoes (and reloads) all of it.
inline constexpr uint64_t kMaxSpanBlocks = 10'000;

/// \brief The tag key of one stream's block ranges.
std::string RangesTagKey(const std::string& app_id);
/// \brief The tag key of one stream's block spans.
std::string SpansTagKey(const std::string& app_id);
/// \brief Both tag keys of one stream (a file holding either records its progress).
std::set<std::string> RecordTagKeys(const std::string& app_id);

/// \brief What one file records of a stream.
struct FileRecord {
  /// Microbatch ranges (rows found by `_amp_batch_id`).
  std::vector<amp::BlockRange> ranges;
  /// Coalesced spans (rows found by block number).
  std::vector<amp::BlockRange> spans;

  bool empty() const { return ranges.empty() && spans.empty(); }
};

/// \brief Read both of a stream's tags of `file`. Errors: kCorruptLog (a malformed tag).
arrow::Result<FileRecord> ReadFileRecord(const delta::Add& file,
                                         const std::string& app_id);

/// \brief Return `ranges` coalesced: per network in block order, duplicates dropped, a
/// range that starts right after the previous one (and whose prev_hash is its hash, when
/// both are known) joins it while the span stays within `max_blocks`.
std::vector<amp::BlockRange> CoalesceRanges(std::vector<amp::BlockRange> ranges,
                                            uint64_t max_blocks = kMaxSpanBlocks);

/// \brief The tags of a file a stream's compaction makes from `files`: every tag merged
/// as delta::MergeFileTags does, then the stream's ranges and spans coalesced into spans
/// when they are all of one network (rows of one network are found by block number).
/// Errors: kCorruptLog (a malformed tag).
arrow::Result<std::optional<delta::NullableStringMap>> MergeStreamTags(
    const std::vector<const delta::Add*>& files, const std::string& app_id);

/// \brief The Python SDK's id of one block range (amp-protocol.md §3.6): 16 hex digits of
/// sha256("{network}:{start}:{end}:{end_hash}:{prev_hash}"); without a hash, end_hash is
/// sha256("{network}:{start}:{end}").
std::string BatchId(const amp::BlockRange& range);

/// \brief The `_amp_batch_id` value of a batch: the ids of its ranges joined with "|".
std::string BatchIdValue(const std::vector<amp::BlockRange>& ranges);

/// \brief Return `batch` with `_amp_batch_id` appended (the same value on every row).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> AddBatchIdColumn(
    const std::shared_ptr<arrow::RecordBatch>& batch, const std::string& value);

/// \brief Encode block ranges for kRangesTag (flat `{network,start,end,hash,prev_hash}`).
std::string RangesToTag(const std::vector<amp::BlockRange>& ranges);
/// \brief Decode kRangesTag.
arrow::Result<std::vector<amp::BlockRange>> RangesFromTag(const std::string& tag);

/// \brief Order ranges of one network by start, then end.
bool ByPosition(const amp::BlockRange& a, const amp::BlockRange& b);

}  // namespace ampdelta::loader
