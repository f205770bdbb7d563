#include "ampdelta/delta/log/row_tracking.h"

#include <algorithm>
#include <limits>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

// Spark's key in the domain's configuration (PROTOCOL.md calls it the high-water mark).
constexpr const char* kHighWaterMarkKey = "rowIdHighWaterMark";

bool IsTrue(const std::map<std::string, std::string>& configuration, const char* key) {
  const auto it = configuration.find(key);
  return it != configuration.end() && AsciiLower(it->second) == "true";
}

}  // namespace

bool RowTrackingEnabled(const std::map<std::string, std::string>& configuration) {
  return IsTrue(configuration, kEnableRowTrackingKey);
}

bool RowTrackingSuspended(const std::map<std::string, std::string>& configuration) {
  return IsTrue(configuration, "delta.rowTrackingSuspended");
}

arrow::Result<std::optional<MaterializedRowColumns>> MaterializedColumns(
    const std::map<std::string, std::string>& configuration,
    const arrow::Schema& schema) {
  if (!RowTrackingEnabled(configuration)) return std::nullopt;
  MaterializedRowColumns columns;
  for (auto [key, name] :
       {std::pair{kMaterializedRowIdKey, &columns.row_id},
        std::pair{kMaterializedRowCommitVersionKey, &columns.row_commit_version}}) {
    const auto it = configuration.find(key);
    if (it == configuration.end() || it->second.empty()) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                       "the table tracks rows (", kEnableRowTrackingKey,
                       "=true) but names no column in ", key);
    }
    *name = it->second;
    if (FindFieldIgnoreCase(schema, *name) >= 0) {
      return InvalidInputError(
          "column '", *name, "' has the name row tracking keeps ",
          key == kMaterializedRowIdKey ? "row IDs" : "commit versions", " in (", key,
          "); rename the column");
    }
  }
  return columns;
}

void NameMaterializedColumns(std::map<std::string, std::string>* configuration) {
  configuration->try_emplace(kMaterializedRowIdKey, "_row-id-col-" + NewUuid());
  configuration->try_emplace(kMaterializedRowCommitVersionKey,
                             "_row-commit-version-col-" + NewUuid());
}

arrow::Result<std::optional<int64_t>> RowIdHighWaterMarkIn(const DomainMetadata& domain) {
  if (domain.domain != kRowTrackingDomain || domain.removed) return std::nullopt;
  const auto config = json_util::ParseJson(domain.configuration);
  std::optional<int64_t> mark;
  if (config.is_object() && config.contains(kHighWaterMarkKey)) {
    mark = json_util::AsInt64(config[kHighWaterMarkKey]);
  }
  if (!mark || *mark < -1) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid, "domain ",
                     kRowTrackingDomain, " has no valid ", kHighWaterMarkKey, ": ",
                     domain.configuration);
  }
  return mark;
}

arrow::Result<int64_t> RowIdHighWaterMark(
    const std::map<std::string, DomainMetadata>& domains) {
  const auto it = domains.find(kRowTrackingDomain);
  if (it == domains.end()) return -1;
  ARROW_ASSIGN_OR_RAISE(const auto mark, RowIdHighWaterMarkIn(it->second));
  return mark.value_or(-1);
}

DomainMetadata RowIdHighWaterMarkDomain(int64_t high_water_mark) {
  nlohmann::json config;
  config[kHighWaterMarkKey] = high_water_mark;
  config["domainName"] = kRowTrackingDomain;
  return DomainMetadata{kRowTrackingDomain, config.dump(), /*removed=*/false};
}

bool KeepsRowCommitVersions(const Protocol& protocol) {
  return HasWriterFeature(protocol, TableFeature::kRowTracking) ||
         HasWriterFeature(protocol, TableFeature::kTypeWideningPreview);
}

void AssignCommitVersions(int64_t version, const std::vector<Add*>& files) {
  for (Add* file : files) {
    if (!file->default_row_commit_version) file->default_row_commit_version = version;
  }
}

arrow::Result<int64_t> AssignFreshRowIds(int64_t high_water_mark,
                                         const std::vector<Add*>& files) {
  for (Add* file : files) {
    if (file->base_row_id) continue;
    const auto rows = StatsNumRecords(*file);
    if (!rows || *rows < 0) {
      return InvalidInputError("file ", file->path,
                               " has no row count (numRecords) in its statistics; row "
                               "tracking needs one to give its rows IDs");
    }
    if (high_water_mark > std::numeric_limits<int64_t>::max() - 1 - *rows) {
      return InvalidInputError("row IDs past ", high_water_mark, " for the ", *rows,
                               " rows of file ", file->path,
                               " would pass the range of a long; nothing was committed");
    }
    file->base_row_id = high_water_mark + 1;
    high_water_mark += *rows;
  }
  return high_water_mark;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithoutColumns(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::vector<std::string>& names) {
  std::vector<int> kept;
  for (int i = 0; i < batch->num_columns(); ++i) {
    if (std::find(names.begin(), names.end(), batch->schema()->field(i)->name()) ==
        names.end()) {
      kept.push_back(i);
    }
  }
  if (static_cast<int>(kept.size()) == batch->num_columns()) return batch;
  return batch->SelectColumns(kept);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithMaterializedColumns(
    const std::shared_ptr<arrow::RecordBatch>& rows,
    const std::shared_ptr<arrow::RecordBatch>& carried,
    const MaterializedRowColumns& columns) {
  std::shared_ptr<arrow::RecordBatch> out = rows;
  int position = rows->num_columns();
  for (const auto& name : columns.names()) {
    std::shared_ptr<arrow::Array> values =
        carried != nullptr ? carried->GetColumnByName(name) : nullptr;
    if (values == nullptr) {
      ARROW_ASSIGN_OR_RAISE(values,
                            arrow::MakeArrayOfNull(arrow::int64(), rows->num_rows()));
    }
    if (values->type_id() != arrow::Type::INT64 || values->length() != rows->num_rows()) {
      return arrow::Status::Invalid(
          "materialized column ", name, " holds ", values->length(), " values of ",
          values->type()->ToString(), " for ", rows->num_rows(), " rows");
    }
    ARROW_ASSIGN_OR_RAISE(
        out, out->AddColumn(position++, arrow::field(name, arrow::int64()), values));
  }
  return out;
}

}  // namespace ampdelta::delta
