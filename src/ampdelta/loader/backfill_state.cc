#include "ampdelta/loader/backfill_state.h"

#include <algorithm>

#include "ampdelta/util/numbers.h"

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

std::string BackfillPartitionAppId(const std::string& stream_app_id,
                                   const std::string& network, const BlockSpan& span) {
  return stream_app_id + kPartitionInfix + network + "/" + std::to_string(span.first) +
         "-" + std::to_string(span.last);
}

std::string BackfillTagKey(const std::string& stream_app_id) {
  return "ampdelta.backfill." + stream_app_id;
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

BackfillState ReadBackfillState(const delta::Snapshot& snapshot,
                                const std::string& stream_app_id) {
  BackfillState state;
  std::map<std::string, std::vector<BlockSpan>> spans;
  std::map<std::string, std::vector<BlockSpan>> planned;
  const std::string plan_prefix = stream_app_id + kPlanInfix;
  for (const auto& [app_id, txn] : snapshot.app_transactions()) {
    if (auto partition = ParseBackfillPartitionAppId(stream_app_id, app_id)) {
      spans[partition->first].push_back(partition->second);
      continue;
    }
    if (!StartsWith(app_id, plan_prefix)) continue;
    const size_t slash = app_id.find('/', plan_prefix.size());
    if (slash == std::string::npos) continue;
    const auto grid =
        ParseGrid(app_id.substr(plan_prefix.size(), slash - plan_prefix.size()));
    auto plan = ParseRangeAppId(app_id.substr(0, slash + 1), app_id);
    if (!grid || !plan) continue;
    planned[plan->first].push_back(plan->second);
    state.plans[plan->first].emplace_back(plan->second, *grid);
  }
  for (auto& [network, list] : spans) state.loaded[network] = MergeSpans(std::move(list));
  for (auto& [network, list] : planned)
    state.planned[network] = MergeSpans(std::move(list));
  return state;
}

}  // namespace ampdelta::loader
