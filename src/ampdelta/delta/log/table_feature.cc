#include "ampdelta/delta/log/table_feature.h"

#include <algorithm>

namespace ampdelta::delta {

const std::vector<TableFeatureInfo>& TableFeatureInfos() {
  using F = TableFeature;
  constexpr auto kWriter = FeatureKind::kWriterOnly;
  constexpr auto kBoth = FeatureKind::kReaderWriter;
  // {feature, name, kind, legacy reader version, legacy writer version, readable,
  //  writable}. Why each is writable: the writer enforces CHECK constraints and fills
  //  generated and identity columns (write/); invariants and column defaults are carried
  //  only while unused (CheckWriteSupported); column mapping writes physical names and
  //  field ids (column_mapping.h); type widening reads narrower files with the table's
  //  type (scan.cc) and keeps `delta.typeChanges`, its preview adds commit versions
  //  (row_tracking.h); clustering keeps statistics of its columns and optimize clusters
  //  (clustering.h); V2 checkpoints are written in their layout (checkpoint_writer.h);
  //  row tracking gets fresh row IDs at commit and keeps them through rewrites.
  static const std::vector<TableFeatureInfo> infos = {
      {F::kAppendOnly, "appendOnly", kWriter, 0, 2, false, true},
      {F::kInvariants, "invariants", kWriter, 0, 2, false, true},
      {F::kCheckConstraints, "checkConstraints", kWriter, 0, 3, false, true},
      {F::kChangeDataFeed, "changeDataFeed", kWriter, 0, 4, false, true},
      {F::kGeneratedColumns, "generatedColumns", kWriter, 0, 4, false, true},
      {F::kColumnMapping, "columnMapping", kBoth, 2, 5, true, true},
      {F::kIdentityColumns, "identityColumns", kWriter, 0, 6, false, true},
      {F::kTimestampNtz, "timestampNtz", kBoth, 0, 0, true, true},
      {F::kDeletionVectors, "deletionVectors", kBoth, 0, 0, true, true},
      {F::kV2Checkpoint, "v2Checkpoint", kBoth, 0, 0, true, true},
      {F::kVacuumProtocolCheck, "vacuumProtocolCheck", kBoth, 0, 0, true, true},
      {F::kTypeWidening, "typeWidening", kBoth, 0, 0, true, true},
      {F::kTypeWideningPreview, "typeWidening-preview", kBoth, 0, 0, true, true},
      {F::kDomainMetadata, "domainMetadata", kWriter, 0, 0, false, true},
      {F::kRowTracking, "rowTracking", kWriter, 0, 0, false, true},
      {F::kClustering, "clustering", kWriter, 0, 0, false, true},
      {F::kInCommitTimestamp, "inCommitTimestamp", kWriter, 0, 0, false, true},
      {F::kAllowColumnDefaults, "allowColumnDefaults", kWriter, 0, 0, false, true},
      {F::kIcebergCompatV1, "icebergCompatV1", kWriter, 0, 0, false, false},
      {F::kIcebergCompatV2, "icebergCompatV2", kWriter, 0, 0, false, false},
      {F::kVariantType, "variantType", kBoth, 0, 0, false, false},
      {F::kVariantTypePreview, "variantType-preview", kBoth, 0, 0, false, false},
  };
  return infos;
}

const TableFeatureInfo& InfoOf(TableFeature feature) {
  return TableFeatureInfos()[static_cast<size_t>(feature)];
}

std::string FeatureName(TableFeature feature) {
  return std::string(InfoOf(feature).name);
}

std::optional<TableFeature> FeatureNamed(std::string_view name) {
  for (const auto& info : TableFeatureInfos()) {
    if (info.name == name) return info.feature;
  }
  return std::nullopt;
}

namespace {

// The features a legacy version implies, in the table's order.
std::vector<std::string> ImpliedByLegacyVersion(int version, bool reader) {
  std::vector<std::string> features;
  for (const auto& info : TableFeatureInfos()) {
    const int implied_from =
        reader ? info.legacy_reader_version : info.legacy_writer_version;
    if (implied_from > 0 && version >= implied_from) features.emplace_back(info.name);
  }
  return features;
}

}  // namespace

std::vector<std::string> ImpliedWriterFeatures(const Protocol& protocol) {
  if (protocol.min_writer_version >= 7) {
    return protocol.writer_features.value_or(std::vector<std::string>{});
  }
  return ImpliedByLegacyVersion(protocol.min_writer_version, /*reader=*/false);
}

std::vector<std::string> ImpliedReaderFeatures(const Protocol& protocol) {
  if (protocol.min_reader_version >= 3) {
    return protocol.reader_features.value_or(std::vector<std::string>{});
  }
  return ImpliedByLegacyVersion(protocol.min_reader_version, /*reader=*/true);
}

bool HasWriterFeature(const Protocol& protocol, TableFeature feature) {
  const std::vector<std::string> features = ImpliedWriterFeatures(protocol);
  return std::find(features.begin(), features.end(), InfoOf(feature).name) !=
         features.end();
}

}  // namespace ampdelta::delta
