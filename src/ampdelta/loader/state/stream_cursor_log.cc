#include "ampdelta/loader/state/stream_cursor_log.h"

#include <nlohmann/json.hpp>

#include "ampdelta/loader/state/stream_tags.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

constexpr int kFormatVersion = 1;

arrow::Status Malformed(const std::string& domain, const std::string& why) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                   "domain metadata '", domain, "' is not a stream cursor record: ", why);
}

}  // namespace

std::string CursorDomainName(const std::string& app_id) {
  return "ampdelta.stream." + app_id;
}

arrow::Result<std::optional<CursorLog>> ReadCursorLog(const delta::Snapshot& snapshot,
                                                      const std::string& app_id) {
  const std::string name = CursorDomainName(app_id);
  const auto& domains = snapshot.domain_metadata();
  auto found = domains.find(name);
  if (found == domains.end() || found->second.removed) return std::nullopt;
  const nlohmann::json parsed = nlohmann::json::parse(
      found->second.configuration, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return Malformed(name, "not a JSON object");
  const auto version = parsed.find("version");
  if (version == parsed.end() || !version->is_number_integer()) {
    return Malformed(name, "no version");
  }
  if (version->get<int64_t>() != kFormatVersion) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "domain metadata '", name, "' has format version ", version->dump(),
                     "; this ampdelta reads version ", kFormatVersion,
                     " (a newer ampdelta wrote it)");
  }
  const auto networks = parsed.find("networks");
  if (networks == parsed.end() || !networks->is_object()) {
    return Malformed(name, "no networks");
  }
  CursorLog log;
  for (auto entry = networks->begin(); entry != networks->end(); ++entry) {
    const auto first = entry->find("first");
    const auto last = entry->find("last");
    if (first == entry->end() || !first->is_number_unsigned() || last == entry->end() ||
        !last->is_object()) {
      return Malformed(name, "network '" + entry.key() + "' lacks first or last");
    }
    ARROW_ASSIGN_OR_RAISE(auto ranges,
                          RangesFromTag("[" + json_util::DumpJsonLossy(*last) + "]"));
    if (ranges.size() != 1 || ranges[0].network != entry.key()) {
      return Malformed(name, "network '" + entry.key() + "' has a range of another");
    }
    log[entry.key()] = NetworkCursor{first->get<uint64_t>(), std::move(ranges[0])};
  }
  return log;
}

delta::DomainMetadata CursorDomain(const std::string& app_id, const CursorLog& log) {
  nlohmann::json networks = nlohmann::json::object();
  for (const auto& [network, cursor] : log) {
    nlohmann::json last = nlohmann::json::parse(RangesToTag({cursor.last}))[0];
    networks[network] = {{"first", cursor.first}, {"last", std::move(last)}};
  }
  const nlohmann::json record = {{"version", kFormatVersion}, {"networks", networks}};
  // Networks and hashes come from parsed app_metadata, so they are UTF-8.
  return delta::DomainMetadata{CursorDomainName(app_id), json_util::DumpJsonLossy(record),
                               log.empty()};
}

CursorLog AdvanceCursorLog(CursorLog log, const std::vector<amp::BlockRange>& ranges) {
  for (const auto& range : ranges) {
    auto [it, fresh] = log.try_emplace(range.network, NetworkCursor{range.start, range});
    if (fresh) continue;
    it->second.first = std::min(it->second.first, range.start);
    if (range.end >= it->second.last.end) it->second.last = range;
  }
  return log;
}

amp::BlockRange UnknownHashRange(const std::string& network, uint64_t block) {
  amp::BlockRange range;
  range.network = network;
  range.start = range.end = block;
  range.hash = "0x" + std::string(64, '0');
  return range;
}

}  // namespace ampdelta::loader
