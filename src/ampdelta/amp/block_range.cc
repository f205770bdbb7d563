#include "ampdelta/amp/block_range.h"

#include <algorithm>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::amp {
namespace {

using nlohmann::json;

arrow::Result<uint64_t> GetBlockNumber(const json& object, const char* key,
                                       std::string_view context) {
  auto it = object.find(key);
  if (it == object.end()) {
    return ProtocolError("app_metadata range is missing '", key, "': ", context);
  }
  if (!it->is_number_unsigned() &&
      !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return ProtocolError("app_metadata range field '", key,
                         "' is not a non-negative integer: ", context);
  }
  return it->get<uint64_t>();
}

arrow::Result<std::string> GetOptionalString(const json& object, const char* key,
                                             std::string_view context) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return ProtocolError("app_metadata range field '", key,
                         "' is not a string: ", context);
  }
  return it->get<std::string>();
}

arrow::Result<BlockRange> ParseRange(const json& item, std::string_view context) {
  if (!item.is_object()) {
    return ProtocolError("app_metadata range is not an object: ", context);
  }
  BlockRange range;
  auto network = item.find("network");
  if (network == item.end() || !network->is_string()) {
    return ProtocolError("app_metadata range has no string 'network': ", context);
  }
  range.network = network->get<std::string>();
  auto numbers = item.find("numbers");
  if (numbers != item.end()) {
    if (!numbers->is_object()) {
      return ProtocolError("app_metadata 'numbers' is not an object: ", context);
    }
    ARROW_ASSIGN_OR_RAISE(range.start, GetBlockNumber(*numbers, "start", context));
    ARROW_ASSIGN_OR_RAISE(range.end, GetBlockNumber(*numbers, "end", context));
  } else {
    ARROW_ASSIGN_OR_RAISE(range.start, GetBlockNumber(item, "start", context));
    ARROW_ASSIGN_OR_RAISE(range.end, GetBlockNumber(item, "end", context));
  }
  if (range.end < range.start) {
    return ProtocolError("app_metadata range ends before it starts: ", context);
  }
  ARROW_ASSIGN_OR_RAISE(range.hash, GetOptionalString(item, "hash", context));
  ARROW_ASSIGN_OR_RAISE(range.prev_hash, GetOptionalString(item, "prev_hash", context));
  auto timestamp = item.find("timestamp");
  if (timestamp != item.end() && !timestamp->is_null()) {
    if (!timestamp->is_number_unsigned()) {
      return ProtocolError("app_metadata 'timestamp' is not an unsigned integer: ",
                           context);
    }
    range.timestamp = timestamp->get<uint64_t>();
  }
  return range;
}

json RangeToJson(const BlockRange& range) {
  json out = {{"network", range.network},
              {"numbers", {{"start", range.start}, {"end", range.end}}}};
  if (!range.hash.empty()) out["hash"] = range.hash;
  if (!range.prev_hash.empty()) out["prev_hash"] = range.prev_hash;
  if (range.timestamp) out["timestamp"] = *range.timestamp;
  return out;
}

}  // namespace

std::string BlockRange::ToString() const {
  return network + "[" + std::to_string(start) + ".." + std::to_string(end) + "]";
}

std::string RangesText(const std::vector<BlockRange>& ranges) {
  std::string text;
  for (const auto& range : ranges) {
    text += (text.empty() ? "" : ",") + range.network + ":" +
            std::to_string(range.start) + "-" + std::to_string(range.end);
  }
  return text;
}

std::string NetworkSpansText(const std::vector<BlockRange>& ranges) {
  std::map<std::string, std::pair<BlockNumber, BlockNumber>> spans;
  for (const auto& range : ranges) {
    auto [it, fresh] = spans.try_emplace(range.network, range.start, range.end);
    it->second.first = std::min(it->second.first, range.start);
    it->second.second = std::max(it->second.second, range.end);
  }
  std::string text;
  for (const auto& [network, span] : spans) {
    text += (text.empty() ? "" : ",") + network + ":" + std::to_string(span.first) + "-" +
            std::to_string(span.second);
  }
  return text;
}

arrow::Result<BatchMetadata> ParseBatchMetadata(std::string_view text) {
  json doc = json_util::ParseJson(text);
  if (doc.is_discarded() || !doc.is_object()) {
    return ProtocolError("app_metadata is not a JSON object: '", EscapeNonUtf8(text),
                         "'");
  }
  BatchMetadata metadata;
  json extra = json::object();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "ranges") {
      if (!it->is_array()) {
        return ProtocolError("app_metadata 'ranges' is not an array: '", text, "'");
      }
      for (const auto& item : *it) {
        ARROW_ASSIGN_OR_RAISE(BlockRange range, ParseRange(item, text));
        metadata.ranges.push_back(std::move(range));
      }
    } else if (it.key() == "ranges_complete") {
      if (!it->is_boolean()) {
        return ProtocolError("app_metadata 'ranges_complete' is not a boolean: '", text,
                             "'");
      }
      metadata.ranges_complete = it->get<bool>();
    } else {
      extra[it.key()] = *it;
    }
  }
  if (doc.find("ranges") == doc.end()) {
    return ProtocolError("app_metadata has no 'ranges': '", text, "'");
  }
  if (!extra.empty()) metadata.extra_json = json_util::DumpJsonLossy(extra);
  return metadata;
}

arrow::Result<std::vector<BlockRange>> ParseBlockRanges(std::string_view text) {
  json doc = json_util::ParseJson(text);
  if (doc.is_discarded() || !doc.is_array()) {
    return ProtocolError("block ranges are not a JSON array: '", EscapeNonUtf8(text),
                         "'");
  }
  std::vector<BlockRange> ranges;
  for (const auto& item : doc) {
    ARROW_ASSIGN_OR_RAISE(BlockRange range, ParseRange(item, text));
    ranges.push_back(std::move(range));
  }
  return ranges;
}

std::string BatchMetadataToJson(const BatchMetadata& metadata) {
  json ranges = json::array();
  for (const auto& range : metadata.ranges) ranges.push_back(RangeToJson(range));
  json out = {{"ranges", std::move(ranges)},
              {"ranges_complete", metadata.ranges_complete}};
  if (!metadata.extra_json.empty()) {
    json extra = json_util::ParseJson(metadata.extra_json);
    if (extra.is_object()) {
      for (auto it = extra.begin(); it != extra.end(); ++it) out[it.key()] = *it;
    }
  }
  // Lossy only for strings the caller set by hand: parsed ones are UTF-8.
  return json_util::DumpJsonLossy(out);
}

std::string CursorToJson(const Cursor& cursor) {
  json out = json::object();
  for (const auto& [network, entry] : cursor) {
    out[network] = {{"number", entry.number}, {"hash", entry.hash}};
  }
  return json_util::DumpJsonLossy(out);
}

arrow::Result<Cursor> ParseCursor(std::string_view text) {
  json doc = json_util::ParseJson(text);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidInputError("resume cursor is not a JSON object: '", text, "'");
  }
  Cursor cursor;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const json& entry = *it;
    auto number = entry.is_object() ? entry.find("number") : entry.end();
    auto hash = entry.is_object() ? entry.find("hash") : entry.end();
    if (!entry.is_object() || number == entry.end() || !number->is_number_unsigned() ||
        hash == entry.end() || !hash->is_string()) {
      return InvalidInputError("resume cursor entry for network '", it.key(),
                               "' must be {\"number\": u64, \"hash\": \"0x…\"}");
    }
    cursor[it.key()] = CursorEntry{number->get<uint64_t>(), hash->get<std::string>()};
  }
  return cursor;
}

Cursor CursorFromRanges(const std::vector<BlockRange>& ranges) {
  Cursor cursor;
  for (const auto& range : ranges) cursor[range.network] = {range.end, range.hash};
  return cursor;
}

}  // namespace ampdelta::amp
