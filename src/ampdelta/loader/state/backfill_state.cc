#include "ampdelta/loader/state/backfill_state.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/numbers.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

constexpr const char* kPartitionInfix = "/backfill/";
constexpr const char* kPlanInfix = "/backfill-plan/";

bool ParseBlock(const std::string& text, uint64_t* block) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  auto parsed = ParseUint64(text);
  if (!parsed) return false;
  *block = *parsed;
  return true;
}

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string SpanText(const BlockSpan& span) {
  if (span.first == span.last) return std::to_string(span.first);
  return std::to_string(span.first) + "-" + std::to_string(span.last);
}

std::string SpansText(const std::vector<BlockSpan>& spans) {
  std::string text;
  for (const auto& span : spans) text += (text.empty() ? "" : ",") + SpanText(span);
  return text;
}

std::string BackfillPartitionAppId(const std::string& stream_app_id,
                                   const std::string& network, const BlockSpan& span) {
  return stream_app_id + kPartitionInfix + network + "/" + std::to_string(span.first) +
         "-" + std::to_string(span.last);
}

std::string BackfillTagKey(const std::string& stream_app_id) {
  return "ampdelta.backfill." + stream_app_id;
}

std::string BackfillTagValue(const BackfillPart& part) {
  nlohmann::json element = {
      {"network", part.network}, {"first", part.span.first}, {"last", part.span.last}};
  if (part.rows) element["rows"] = *part.rows;
  // Networks come from parsed app_metadata, so they are UTF-8.
  return json_util::DumpJsonLossy(nlohmann::json::array({element}));
}

namespace {

arrow::Status MalformedTag(const std::string& key, const std::string& why) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "file tag ", key,
                   " is not a list of backfill partitions: ", why);
}

// `network:first-last` or `network:block`, as tags were written before they counted rows.
std::optional<BackfillPart> ParseLegacyPart(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  BackfillPart part;
  part.network = text.substr(0, colon);
  const std::string range = text.substr(colon + 1);
  const size_t dash = range.find('-');
  if (!ParseBlock(range.substr(0, dash), &part.span.first)) return std::nullopt;
  part.span.last = part.span.first;
  if (dash != std::string::npos && !ParseBlock(range.substr(dash + 1), &part.span.last)) {
    return std::nullopt;
  }
  if (part.span.first > part.span.last) return std::nullopt;
  return part;
}

std::optional<BackfillPart> ParsePart(const nlohmann::json& element) {
  if (element.is_string()) return ParseLegacyPart(element.get<std::string>());
  if (!element.is_object() || !element.contains("network") ||
      !element["network"].is_string()) {
    return std::nullopt;
  }
  BackfillPart part;
  part.network = element["network"].get<std::string>();
  auto first =
      element.contains("first") ? json_util::AsUint64(element["first"]) : std::nullopt;
  auto last =
      element.contains("last") ? json_util::AsUint64(element["last"]) : std::nullopt;
  if (!first || !last || *first > *last) return std::nullopt;
  part.span = {*first, *last};
  if (element.contains("rows")) {
    auto rows = json_util::AsInt64(element["rows"]);
    if (!rows || *rows < 0) return std::nullopt;
    part.rows = *rows;
  }
  return part;
}

}  // namespace

arrow::Result<std::vector<BackfillPart>> ReadBackfillTag(
    const delta::Add& file, const std::string& stream_app_id) {
  std::vector<BackfillPart> parts;
  if (!file.tags) return parts;
  const std::string key = BackfillTagKey(stream_app_id);
  auto tag = file.tags->find(key);
  if (tag == file.tags->end() || !tag->second) return parts;
  const nlohmann::json value = json_util::ParseJson(*tag->second);
  if (!value.is_array()) return MalformedTag(key, "not a JSON array");
  for (const auto& element : value) {
    auto part = ParsePart(element);
    if (!part) return MalformedTag(key, json_util::DumpJsonLossy(element));
    parts.push_back(std::move(*part));
  }
  return parts;
}

std::optional<int64_t> BackfillRecord::Rows() const {
  // Records written before ampdelta counted rows hold the partition's last block.
  if (version < 0 || static_cast<uint64_t>(version) == span.last) return std::nullopt;
  return version;
}

std::string BackfillPlanAppId(const std::string& stream_app_id,
                              const std::string& network, const BlockSpan& span,
                              const BackfillGrid& grid) {
  return stream_app_id + kPlanInfix + std::to_string(grid.partition_size) + "x" +
         std::to_string(grid.shard_count) + "/" + network + "/" +
         std::to_string(span.first) + "-" + std::to_string(span.last);
}

namespace {

// `<prefix><network>/<first>-<last>`; the network may hold '/', the range never does.
std::optional<std::pair<std::string, BlockSpan>> ParseRangeAppId(
    const std::string& prefix, const std::string& app_id) {
  if (!StartsWith(app_id, prefix)) return std::nullopt;
  const size_t slash = app_id.rfind('/');
  if (slash < prefix.size() + 1) return std::nullopt;
  const std::string network = app_id.substr(prefix.size(), slash - prefix.size());
  const std::string range = app_id.substr(slash + 1);
  const size_t dash = range.find('-');
  BlockSpan span;
  if (dash == std::string::npos || !ParseBlock(range.substr(0, dash), &span.first) ||
      !ParseBlock(range.substr(dash + 1), &span.last) || span.first > span.last) {
    return std::nullopt;
  }
  return std::make_pair(network, span);
}

// `<size>x<shards>/` at the start of a plan app id's rest.
std::optional<BackfillGrid> ParseGrid(const std::string& text) {
  const size_t x = text.find('x');
  uint64_t size = 0;
  uint64_t shards = 0;
  if (x == std::string::npos || !ParseBlock(text.substr(0, x), &size) ||
      !ParseBlock(text.substr(x + 1), &shards) || size == 0 || shards == 0 ||
      shards > 1'000'000) {
    return std::nullopt;
  }
  return BackfillGrid{size, static_cast<int>(shards)};
}

}  // namespace

std::optional<BackfillPlan> ParseBackfillPlanAppId(const std::string& stream_app_id,
                                                   const std::string& app_id) {
  const std::string prefix = stream_app_id + kPlanInfix;
  if (!StartsWith(app_id, prefix)) return std::nullopt;
  const size_t slash = app_id.find('/', prefix.size());
  if (slash == std::string::npos) return std::nullopt;
  const auto grid = ParseGrid(app_id.substr(prefix.size(), slash - prefix.size()));
  auto plan = ParseRangeAppId(app_id.substr(0, slash + 1), app_id);
  if (!grid || !plan) return std::nullopt;
  return BackfillPlan{std::move(plan->first), plan->second, *grid};
}

std::optional<std::pair<std::string, BlockSpan>> ParseBackfillPartitionAppId(
    const std::string& stream_app_id, const std::string& app_id) {
  return ParseRangeAppId(stream_app_id + kPartitionInfix, app_id);
}

std::vector<BlockSpan> MergeSpans(std::vector<BlockSpan> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const BlockSpan& a, const BlockSpan& b) { return a.first < b.first; });
  std::vector<BlockSpan> merged;
  for (const auto& span : spans) {
    if (!merged.empty() &&
        (merged.back().last == UINT64_MAX || span.first <= merged.back().last + 1)) {
      merged.back().last = std::max(merged.back().last, span.last);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

std::vector<BlockSpan> BackfillState::Missing(const std::string& network,
                                              const BlockSpan& wanted) const {
  std::vector<BlockSpan> missing;
  uint64_t next = wanted.first;
  bool done = false;
  auto found = loaded.find(network);
  if (found != loaded.end()) {
    for (const auto& span : found->second) {
      if (span.last < next) continue;
      if (span.first > wanted.last) break;
      if (span.first > next) missing.push_back({next, span.first - 1});
      if (span.last >= wanted.last) {
        done = true;
        break;
      }
      next = span.last + 1;
    }
  }
  if (!done && next <= wanted.last) missing.push_back({next, wanted.last});
  return missing;
}

std::map<std::string, std::vector<BlockSpan>> BackfillState::Unfinished() const {
  std::map<std::string, std::vector<BlockSpan>> unfinished;
  for (const auto& [network, spans] : planned) {
    for (const auto& span : spans) {
      for (const auto& missing : Missing(network, span)) {
        unfinished[network].push_back(missing);
      }
    }
  }
  for (const auto& [network, spans] : loaded) {
    for (size_t i = 1; i < spans.size(); ++i) {
      unfinished[network].push_back({spans[i - 1].last + 1, spans[i].first - 1});
    }
  }
  for (auto& [network, spans] : unfinished) spans = MergeSpans(std::move(spans));
  return unfinished;
}

std::set<std::string> BackfillState::StaleAppIds(const std::string& stream_app_id) const {
  std::set<std::string> ids;
  for (const auto& record : stale) {
    ids.insert(BackfillPartitionAppId(stream_app_id, record.network, record.span));
  }
  return ids;
}

namespace {

// The live files' tags: what the table holds.
arrow::Status ReadTags(const delta::Snapshot& snapshot, const std::string& stream_app_id,
                       BackfillState* state) {
  for (const auto& file : snapshot.files()) {
    ARROW_ASSIGN_OR_RAISE(auto parts, ReadBackfillTag(file, stream_app_id));
    for (auto& part : parts) state->tagged[part.network].push_back(std::move(part));
  }
  for (auto& [network, parts] : state->tagged) {
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
      return a.span.first != b.span.first ? a.span.first < b.span.first
                                          : a.span.last < b.span.last;
    });
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  }
  return arrow::Status::OK();
}

// The partition and plan records of the log.
void ReadRecords(const delta::Snapshot& snapshot, const std::string& stream_app_id,
                 BackfillState* state) {
  std::map<std::string, std::vector<BlockSpan>> planned;
  for (const auto& [app_id, txn] : snapshot.app_transactions()) {
    if (auto partition = ParseBackfillPartitionAppId(stream_app_id, app_id)) {
      state->records.push_back({partition->first, partition->second, txn.version});
    } else if (auto plan = ParseBackfillPlanAppId(stream_app_id, app_id)) {
      planned[plan->network].push_back(plan->span);
      state->plans[plan->network].emplace_back(plan->span, plan->grid);
    }
  }
  for (auto& [network, list] : planned)
    state->planned[network] = MergeSpans(std::move(list));
}

bool Covered(const std::vector<BlockSpan>& merged, const BlockSpan& span) {
  return std::any_of(merged.begin(), merged.end(), [&](const BlockSpan& held) {
    return held.first <= span.first && span.last <= held.last;
  });
}

// Which records the table corroborates: an empty partition's, or one whose blocks hold
// rows in files without the tag (another engine compacted them).
arrow::Status JudgeRecords(const delta::Snapshot& snapshot,
                           const std::string& stream_app_id,
                           const std::string& block_column, BackfillState* state,
                           std::map<std::string, std::vector<BlockSpan>>* held) {
  const std::map<std::string, std::vector<BlockSpan>> tags = *held;
  // Blocks the query's stream took over are its own: a record of them is not judged, and
  // one reaching into them is judged on its blocks below (their rows cannot be counted).
  const auto below_stream =
      [state](const BackfillRecord& record) -> std::optional<BlockSpan> {
    auto from = state->stream_from.find(record.network);
    if (from == state->stream_from.end() || record.span.last < from->second) {
      return record.span;
    }
    if (record.span.first >= from->second) return std::nullopt;
    return BlockSpan{record.span.first, from->second - 1};
  };
  std::vector<const BackfillRecord*> unconfirmed;
  std::vector<BlockSpan> judged;
  for (const auto& record : state->records) {
    const auto span = below_stream(record);
    if (!span) continue;
    const auto tagged = tags.find(record.network);
    if (tagged != tags.end() && Covered(tagged->second, *span)) continue;
    if (record.Empty()) {
      (*held)[record.network].push_back(record.span);
      continue;
    }
    unconfirmed.push_back(&record);
    judged.push_back(*span);
  }
  if (unconfirmed.empty()) return arrow::Status::OK();
  // Rows in files without the tag: another engine's rewrite of the backfill's files,
  // or the query's stream, which took the blocks over.
  const std::string tag = BackfillTagKey(stream_app_id);
  const auto untagged = [&tag](const delta::Add& file) {
    return delta::StatsNumRecords(file) != std::optional<int64_t>(0) &&
           (!file.tags || file.tags->count(tag) == 0);
  };
  std::vector<int64_t> found(unconfirmed.size(), 0);
  if (block_column.empty() ||
      delta::FindFieldIgnoreCase(*snapshot.schema(), block_column) < 0) {
    // Nothing tells the rows' blocks: any untagged rows may be the records'.
    const bool any =
        std::any_of(snapshot.files().begin(), snapshot.files().end(), untagged);
    std::fill(found.begin(), found.end(), any ? 1 : 0);
  } else {
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const auto& span : judged) spans.emplace_back(span.first, span.last);
    ARROW_ASSIGN_OR_RAISE(found, RowsIn(snapshot, block_column, spans, untagged));
  }
  for (size_t i = 0; i < unconfirmed.size(); ++i) {
    const BackfillRecord& record = *unconfirmed[i];
    if (found[i] == 0) {
      state->stale.push_back(record);
      continue;
    }
    const auto rows = record.Rows();
    const auto tagged = tags.find(record.network);
    const bool partly_tagged =
        tagged != tags.end() &&
        std::any_of(tagged->second.begin(), tagged->second.end(), [&](const auto& span) {
          return span.first <= record.span.last && record.span.first <= span.last;
        });
    const bool whole = judged[i] == record.span;
    if (rows && found[i] < *rows && !block_column.empty() && !partly_tagged && whole) {
      state->short_records.push_back({record, found[i]});
    }
    (*held)[record.network].push_back(record.span);
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<BackfillState> ReadBackfillState(const delta::Snapshot& snapshot,
                                               const std::string& stream_app_id,
                                               const std::string& block_column) {
  BackfillState state;
  ARROW_RETURN_NOT_OK(ReadTags(snapshot, stream_app_id, &state));
  ReadRecords(snapshot, stream_app_id, &state);
  state.stream_from = TakeoverBlocks(snapshot, stream_app_id);
  for (auto& [network, spans] : state.planned) {
    auto from = state.stream_from.find(network);
    if (from == state.stream_from.end()) continue;
    std::vector<BlockSpan> below;
    for (auto span : spans) {
      if (span.first >= from->second) continue;
      span.last = std::min(span.last, from->second - 1);
      below.push_back(span);
    }
    spans = std::move(below);
  }
  std::map<std::string, std::vector<BlockSpan>> held;
  for (const auto& [network, parts] : state.tagged) {
    for (const auto& part : parts) held[network].push_back(part.span);
  }
  for (auto& [network, spans] : held) spans = MergeSpans(std::move(spans));
  ARROW_RETURN_NOT_OK(JudgeRecords(snapshot, stream_app_id, block_column, &state, &held));
  for (auto& [network, spans] : held)
    state.loaded[network] = MergeSpans(std::move(spans));
  return state;
}

}  // namespace ampdelta::loader
