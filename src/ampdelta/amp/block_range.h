#pragma once

/// \file block_range.h
/// \brief Block ranges and the per-batch `app_metadata` Amp attaches to Flight data.
///
/// Wire format (amp-protocol.md §1.5):
/// `{"ranges":[{"network":"mainnet","numbers":{"start":1,"end":2},"hash":"0x…",
///   "prev_hash":"0x…","timestamp":1700000000}],"ranges_complete":false}`.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>

namespace ampdelta::amp {

using BlockNumber = uint64_t;

/// \brief An inclusive range of blocks on one network, with the hash of its end block and
/// the parent hash of its start block.
struct BlockRange {
  std::string network;
  BlockNumber start = 0;
  BlockNumber end = 0;
  /// Hash of the END block, `0x` + 64 lower-case hex digits; may be empty if unknown.
  std::string hash;
  /// Parent hash of the START block; may be empty if unknown.
  std::string prev_hash;
  /// Unix seconds of the end block, when the server knows it.
  std::optional<uint64_t> timestamp;

  /// \brief Return the number of blocks in the range.
  uint64_t size() const { return end - start + 1; }
  /// \brief Return "network[start..end]".
  std::string ToString() const;

  bool operator==(const BlockRange& other) const = default;
};

/// \brief Return "network:start-end" for each range, comma-separated, in their order (a
/// batch's ranges as loads report them).
std::string RangesText(const std::vector<BlockRange>& ranges);

/// \brief Return "network:start-end" per network, from its lowest start to its highest
/// end, comma-separated in network order (what a stream commit or reorg covered).
std::string NetworkSpansText(const std::vector<BlockRange>& ranges);

/// \brief The parsed `app_metadata` of one Flight message.
struct BatchMetadata {
  std::vector<BlockRange> ranges;
  bool ranges_complete = false;
  /// Top-level keys other than `ranges`/`ranges_complete`, kept as a JSON object text.
  std::string extra_json;

  bool operator==(const BatchMetadata& other) const = default;
};

/// \brief Parse `app_metadata` JSON. Accepts the server's nested `numbers` form and the
/// Python SDK's flat `{network,start,end,hash,prev_hash}` form.
arrow::Result<BatchMetadata> ParseBatchMetadata(std::string_view json);

/// \brief Parse a JSON array of block ranges, in either form ParseBatchMetadata accepts.
/// \return ErrorCode::kProtocolError for text that is not such an array
arrow::Result<std::vector<BlockRange>> ParseBlockRanges(std::string_view json);

/// \brief Serialise metadata in the server's form (nested `numbers`).
std::string BatchMetadataToJson(const BatchMetadata& metadata);

/// \brief A position in the chain per network: the last block received and its hash.
struct CursorEntry {
  BlockNumber number = 0;
  std::string hash;
  bool operator==(const CursorEntry& other) const = default;
};

/// \brief Resume cursor, network → last complete block; sent as the `amp-resume` header.
using Cursor = std::map<std::string, CursorEntry>;

/// \brief Encode a cursor as Amp's `amp-resume` JSON:
/// `{"net":{"number":N,"hash":"0x…"}}`.
std::string CursorToJson(const Cursor& cursor);

/// \brief Parse an `amp-resume` JSON cursor.
arrow::Result<Cursor> ParseCursor(std::string_view json);

/// \brief Build a cursor from the ranges of a completed microbatch (number = end, hash).
Cursor CursorFromRanges(const std::vector<BlockRange>& ranges);

}  // namespace ampdelta::amp
