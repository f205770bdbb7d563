#include "ampdelta/delta/log/protocol_support.h"

#include <algorithm>
#include <functional>

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

bool Readable(const std::string& name) {
  const auto feature = FeatureNamed(name);
  return feature && InfoOf(*feature).readable;
}

bool Writable(const std::string& name) {
  const auto feature = FeatureNamed(name);
  return feature && InfoOf(*feature).writable;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

bool AnyField(const arrow::Schema& schema,
              const std::function<bool(const arrow::Field&)>& pred) {
  std::function<bool(const arrow::Field&)> visit = [&](const arrow::Field& field) {
    if (pred(field)) return true;
    for (const auto& child : field.type()->fields()) {
      if (visit(*child)) return true;
    }
    return false;
  };
  for (const auto& field : schema.fields()) {
    if (visit(*field)) return true;
  }
  return false;
}

bool HasFieldMetadata(const arrow::Schema& schema, const std::string& prefix) {
  return AnyField(schema, [&](const arrow::Field& field) {
    if (field.metadata() == nullptr) return false;
    for (const auto& key : field.metadata()->keys()) {
      if (key.rfind(prefix, 0) == 0) return true;
    }
    return false;
  });
}

bool ConfigTrue(const std::map<std::string, std::string>& configuration,
                const std::string& key) {
  auto it = configuration.find(key);
  if (it == configuration.end()) return false;
  return AsciiLower(it->second) == "true";
}

}  // namespace

arrow::Status CheckReadSupported(const Protocol& protocol) {
  if (protocol.min_reader_version < 1 || protocol.min_reader_version > 3) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "table requires reader version ", protocol.min_reader_version,
                     "; ampdelta reads versions 1 to 3");
  }
  if (protocol.min_reader_version == 3) {
    if (!protocol.reader_features) {
      return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::Invalid,
                       "protocol has reader version 3 but no readerFeatures");
    }
    std::vector<std::string> unknown;
    for (const auto& feature : *protocol.reader_features) {
      if (!Readable(feature)) unknown.push_back(feature);
    }
    if (!unknown.empty()) {
      return MakeError(
          ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
          "table uses reader features ampdelta does not support: ", JoinNames(unknown));
    }
  }
  return arrow::Status::OK();
}

arrow::Status CheckWriteSupported(const Protocol& protocol, const Metadata& metadata,
                                  const arrow::Schema& schema) {
  ARROW_RETURN_NOT_OK(CheckReadSupported(protocol));
  if (protocol.min_writer_version < 1 || protocol.min_writer_version > 7) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "table requires writer version ", protocol.min_writer_version,
                     "; ampdelta writes versions 1 to 7");
  }
  std::vector<std::string> refused;
  for (const auto& feature : ImpliedWriterFeatures(protocol)) {
    if (!Writable(feature)) refused.push_back(feature);
  }
  // Features ampdelta can carry only while nothing uses them. CHECK constraints are
  // enforced by the writer (check_constraints.h), which refuses one it cannot evaluate;
  // identity and generated columns get their values there too (identity_columns.h,
  // generated_columns.h, which refuses an expression it cannot evaluate).
  if (HasFieldMetadata(schema, "delta.invariants"))
    refused.push_back(FeatureName(TableFeature::kInvariants) + " (in use)");
  if (HasFieldMetadata(schema, "CURRENT_DEFAULT")) {
    refused.push_back(FeatureName(TableFeature::kAllowColumnDefaults) + " (in use)");
  }
  const auto mapping = ColumnMappingModeOf(metadata.configuration);
  if (!mapping.ok()) {
    refused.push_back(FeatureName(TableFeature::kColumnMapping) + " (mode " +
                      metadata.configuration.at(kColumnMappingModeKey) + ")");
  } else if (*mapping != ColumnMappingMode::kNone) {
    ARROW_RETURN_NOT_OK(CheckColumnMapping(schema));
  }
  // A table that tracks rows must say where its rewrites keep the IDs.
  ARROW_RETURN_NOT_OK(MaterializedColumns(metadata.configuration, schema).status());
  std::sort(refused.begin(), refused.end());
  refused.erase(std::unique(refused.begin(), refused.end()), refused.end());
  // A feature named with how it is used ("columnMapping (mode name)") once, not twice.
  std::erase_if(refused, [&refused](const std::string& feature) {
    return std::any_of(refused.begin(), refused.end(), [&](const std::string& other) {
      return other.rfind(feature + " (", 0) == 0;
    });
  });
  if (!refused.empty()) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "ampdelta cannot write this table; it uses writer features ampdelta "
                     "does not implement: ",
                     JoinNames(refused));
  }
  return arrow::Status::OK();
}

Protocol ProtocolForNewTable(const arrow::Schema& schema,
                             const std::map<std::string, std::string>& configuration,
                             const std::vector<TableFeature>& writer_features) {
  return UpgradeProtocol(Protocol{}, schema, configuration, writer_features);
}

Protocol UpgradeProtocol(const Protocol& existing, const arrow::Schema& schema,
                         const std::map<std::string, std::string>& configuration,
                         const std::vector<TableFeature>& writer_features_needed) {
  std::vector<std::string> reader;
  std::vector<std::string> writer;
  // A feature the table needs: listed for writers, and for readers too when its kind
  // says readers must know it, wherever the table does not list it yet.
  const std::vector<std::string> existing_reader = ImpliedReaderFeatures(existing);
  const auto need = [&](TableFeature feature) {
    const std::string name = FeatureName(feature);
    if (!HasWriterFeature(existing, feature)) writer.push_back(name);
    if (InfoOf(feature).kind == FeatureKind::kReaderWriter &&
        std::find(existing_reader.begin(), existing_reader.end(), name) ==
            existing_reader.end()) {
      reader.push_back(name);
    }
  };
  for (const auto feature : writer_features_needed) need(feature);
  if (NeedsTimestampNtz(schema)) need(TableFeature::kTimestampNtz);
  if (ConfigTrue(configuration, "delta.enableDeletionVectors")) {
    need(TableFeature::kDeletionVectors);
  }
  if (TypeWideningEnabled(configuration) &&
      !HasWriterFeature(existing, TableFeature::kTypeWideningPreview)) {
    need(TableFeature::kTypeWidening);
  }
  const auto policy = configuration.find("delta.checkpointPolicy");
  if (policy != configuration.end() && AsciiLower(policy->second) == "v2") {
    need(TableFeature::kV2Checkpoint);
  }
  if (ConfigTrue(configuration, "delta.enableInCommitTimestamps")) {
    need(TableFeature::kInCommitTimestamp);
  }
  if (RowTrackingEnabled(configuration) &&
      !HasWriterFeature(existing, TableFeature::kRowTracking)) {
    writer.push_back(FeatureName(TableFeature::kDomainMetadata));
    writer.push_back(FeatureName(TableFeature::kRowTracking));
  }
  if (ColumnMappingModeOf(configuration).ValueOr(ColumnMappingMode::kNone) !=
      ColumnMappingMode::kNone) {
    need(TableFeature::kColumnMapping);
  }
  const bool change_feed = ConfigTrue(configuration, "delta.enableChangeDataFeed");
  Protocol protocol = existing;
  if (writer.empty() && existing.min_writer_version < 7) {
    // Legacy versions keep the table readable by every engine, Polars included.
    if (change_feed)
      protocol.min_writer_version = std::max(protocol.min_writer_version, 4);
    return protocol;
  }
  if (change_feed) writer.push_back(FeatureName(TableFeature::kChangeDataFeed));
  if (ConfigTrue(configuration, "delta.appendOnly")) {
    writer.push_back(FeatureName(TableFeature::kAppendOnly));
  }
  const auto add = [](std::vector<std::string>* out,
                      const std::vector<std::string>& more) {
    for (const auto& feature : more) {
      if (std::find(out->begin(), out->end(), feature) == out->end())
        out->push_back(feature);
    }
  };
  // A legacy protocol lists what its versions implied, as Spark does: writer 2 implies
  // invariants, which Spark requires of a table with a NOT NULL column.
  std::vector<std::string> writer_features = ImpliedWriterFeatures(existing);
  add(&writer_features, writer);
  protocol.min_writer_version = 7;
  protocol.writer_features = std::move(writer_features);
  if (!reader.empty() || existing.min_reader_version >= 3) {
    // Reader version 2 implies columnMapping, which the listed features must keep.
    std::vector<std::string> reader_features = ImpliedReaderFeatures(existing);
    add(&reader_features, reader);
    protocol.min_reader_version = 3;
    protocol.reader_features = std::move(reader_features);
    // Every reader feature is a writer feature too.
    add(&*protocol.writer_features, *protocol.reader_features);
  }
  return protocol;
}

Protocol CombineProtocols(const Protocol& existing, const Protocol& required) {
  const bool features =
      existing.min_writer_version >= 7 || required.min_writer_version >= 7 ||
      existing.min_reader_version >= 3 || required.min_reader_version >= 3;
  Protocol combined;
  combined.min_reader_version =
      std::max(existing.min_reader_version, required.min_reader_version);
  combined.min_writer_version =
      std::max(existing.min_writer_version, required.min_writer_version);
  if (!features) return combined;
  auto add = [](std::vector<std::string>* out, const std::vector<std::string>& more) {
    for (const auto& feature : more) {
      if (std::find(out->begin(), out->end(), feature) == out->end())
        out->push_back(feature);
    }
  };
  combined.min_writer_version = 7;
  std::vector<std::string> writer;
  add(&writer, ImpliedWriterFeatures(existing));
  // A legacy requirement is the default of a new table, not a feature this table needs.
  if (required.min_writer_version >= 7) add(&writer, ImpliedWriterFeatures(required));
  combined.writer_features = std::move(writer);
  if (combined.min_reader_version >= 3) {
    combined.min_reader_version = 3;
    std::vector<std::string> reader;
    add(&reader, ImpliedReaderFeatures(existing));
    add(&reader, ImpliedReaderFeatures(required));
    // Every reader feature is a writer feature too (PROTOCOL.md "Table Features").
    add(&*combined.writer_features, reader);
    combined.reader_features = std::move(reader);
  }
  return combined;
}

}  // namespace ampdelta::delta
