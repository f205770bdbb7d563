#include "events.h"

#include <nlohmann/json.hpp>

#include "ampdelta/util/status.h"

namespace ampdelta::python {
namespace {

nlohmann::json ErrorObject(const arrow::Status& status) {
  const ErrorDetail* detail = GetErrorDetail(status);
  nlohmann::json error = {
      {"code", detail != nullptr ? ErrorCodeName(detail->code()) : "internal"},
      {"class", ErrorClassName(ClassifyError(status))},
      {"message", status.message()}};
  if (detail != nullptr && !detail->subcode().empty())
    error["subcode"] = detail->subcode();
  return error;
}

}  // namespace

std::string EventJson(const char* kind, const loader::LoadResult& result) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& range : result.invalidation_ranges) {
    ranges.push_back(
        {{"network", range.network}, {"start", range.start}, {"end", range.end}});
  }
  nlohmann::json progress = {{"batch_index", result.progress.batch_index},
                             {"total_rows", result.progress.total_rows},
                             {"total_bytes", result.progress.total_bytes},
                             {"block_ranges", result.progress.block_ranges}};
  if (result.progress.end_timestamp) {
    progress["end_timestamp"] = *result.progress.end_timestamp;
  }
  nlohmann::json metadata = nlohmann::json::object();
  for (const auto& [key, value] : result.metadata) {
    std::visit([&](const auto& typed) { metadata[key] = typed; }, value);
  }
  nlohmann::json body = {{"rows_loaded", result.rows_loaded},
                         {"duration", result.duration},
                         {"ops_per_second", result.ops_per_second},
                         {"table_name", result.table_name},
                         {"loader_type", result.loader_type},
                         {"success", result.success},
                         {"error", result.error},
                         {"metadata", std::move(metadata)},
                         {"progress", std::move(progress)},
                         {"is_reorg", result.is_reorg},
                         {"invalidation_ranges", std::move(ranges)}};
  if (!result.success) {
    body["failure"] = ErrorObject(
        result.status.ok() ? arrow::Status::UnknownError(result.error) : result.status);
  }
  // Replace, not throw, on text that is not UTF-8 (a table path, a server message).
  return nlohmann::json{{"kind", kind}, {"result", std::move(body)}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ErrorJson(const arrow::Status& status) {
  return ErrorObject(status).dump(-1, ' ', false,
                                  nlohmann::json::error_handler_t::replace);
}

}  // namespace ampdelta::python
