#include "ampdelta/delta/log/clustering.h"

#include <algorithm>

#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

arrow::Status Malformed(const std::string& why) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                   "domain metadata '", kClusteringDomain, "' is malformed: ", why);
}

// What per-file statistics (minValues/maxValues) cover: the types a table can be
// partitioned by, but booleans.
bool ClusterableType(const arrow::DataType& type) {
  return IsPartitionableType(type) && type.id() != arrow::Type::BOOL;
}

}  // namespace

arrow::Result<std::vector<std::string>> ClusteringColumns(const Snapshot& snapshot) {
  auto found = snapshot.domain_metadata().find(kClusteringDomain);
  if (found == snapshot.domain_metadata().end() || found->second.removed) {
    return std::vector<std::string>{};
  }
  const nlohmann::json parsed =
      nlohmann::json::parse(found->second.configuration, nullptr,
                            /*allow_exceptions=*/false);
  if (!parsed.is_object()) return Malformed("not a JSON object");
  const auto columns = parsed.find("clusteringColumns");
  if (columns == parsed.end() || !columns->is_array()) {
    return Malformed("no clusteringColumns list");
  }
  std::vector<std::string> out;
  for (const auto& column : *columns) {
    // Spark writes paths (["a","b"] for a.b); PROTOCOL.md's example plain names.
    if (column.is_string()) {
      out.push_back(column.get<std::string>());
      continue;
    }
    if (!column.is_array() || column.empty() ||
        !std::all_of(column.begin(), column.end(),
                     [](const nlohmann::json& part) { return part.is_string(); })) {
      return Malformed("a clustering column is neither a name nor a path");
    }
    if (column.size() > 1) {
      return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                       "the table clusters by nested column ", column.dump(),
                       "; ampdelta clusters by top-level columns only");
    }
    out.push_back(column[0].get<std::string>());
  }
  // Under column mapping the domain names columns physically (as Spark writes it).
  for (auto& name : out) {
    for (const auto& field : snapshot.schema()->fields()) {
      if (PhysicalName(*field) == name) {
        name = field->name();
        break;
      }
    }
  }
  return out;
}

arrow::Result<std::vector<std::string>> ResolveClusteringColumns(
    const std::vector<std::string>& columns, const arrow::Schema& schema,
    const std::vector<std::string>& partition_columns) {
  if (!columns.empty() && !partition_columns.empty()) {
    return InvalidInputError(
        "a table cannot be both partitioned and clustered (PROTOCOL.md): "
        "drop partition_by or cluster_by");
  }
  std::vector<std::string> out;
  for (const auto& column : columns) {
    const int index = FindFieldIgnoreCase(schema, column);
    if (index < 0) {
      return InvalidInputError("cluster_by names column '", column,
                               "', which the table lacks",
                               NestedFieldHint(schema, column));
    }
    const auto& field = *schema.field(index);
    if (!ClusterableType(*field.type())) {
      return InvalidInputError(
          "cannot cluster by column '", field.name(), "' of type ",
          field.type()->ToString(),
          ": clustering needs a column with min/max statistics (a number, "
          "string, date or timestamp)");
    }
    if (std::find(out.begin(), out.end(), field.name()) != out.end()) {
      return InvalidInputError("cluster_by names column '", field.name(),
                               "' twice (column names are case-insensitive)");
    }
    out.push_back(field.name());
  }
  return out;
}

DomainMetadata ClusteringDomain(const std::vector<std::string>& columns,
                                const arrow::Schema& schema) {
  nlohmann::json paths = nlohmann::json::array();
  for (const auto& column : columns) {
    paths.push_back(nlohmann::json::array({PhysicalColumnName(schema, column)}));
  }
  const nlohmann::json config = {{"clusteringColumns", paths},
                                 {"domainName", kClusteringDomain}};
  // Column names come from the schema, which is UTF-8; lossy all the same, never a throw.
  return DomainMetadata{kClusteringDomain, json_util::DumpJsonLossy(config), false};
}

}  // namespace ampdelta::delta
