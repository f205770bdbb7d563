#include "ampdelta/delta/log/reader_support.h"

#include <algorithm>

#include "ampdelta/delta/log/column_mapping.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

const std::vector<KnownReader>& KnownReaders() {
  using F = TableFeature;
  // Tested: the versions the interop suite installs; each claim is asserted there.
  static const std::vector<KnownReader> readers = {
      {"spark",
       "Spark 4.1 + delta-spark 4.4",
       {F::kColumnMapping, F::kDeletionVectors, F::kTimestampNtz, F::kV2Checkpoint,
        F::kTypeWidening, F::kTypeWideningPreview, F::kVacuumProtocolCheck},
       2},
      {"duckdb",
       "DuckDB 1.5 + delta extension 1.5",
       {F::kColumnMapping, F::kDeletionVectors, F::kTimestampNtz, F::kV2Checkpoint,
        F::kTypeWidening, F::kTypeWideningPreview, F::kVacuumProtocolCheck},
       2},
      // Polars refuses a table at reader version 2, column mapping on or not.
      {"polars", "Polars 2.1", {F::kDeletionVectors, F::kTimestampNtz}, 1},
      // deltalake opens a table at reader version 2, and with column mapping on reads
      // every column as null.
      {"deltalake", "deltalake 1.6", {F::kTimestampNtz}, 2},
      // Documented: what each one's own documentation says it reads (downstream.md).
      {"trino",
       "documented",
       {F::kColumnMapping, F::kDeletionVectors, F::kTimestampNtz, F::kV2Checkpoint,
        F::kTypeWidening, F::kVacuumProtocolCheck},
       2},
      {"athena", "documented", {F::kColumnMapping, F::kTimestampNtz}, 2},
      {"snowflake", "documented", {F::kDeletionVectors, F::kTimestampNtz}, 1},
      {"bigquery", "documented", {F::kColumnMapping, F::kDeletionVectors}, 2},
      {"powerbi", "documented", {F::kColumnMapping, F::kDeletionVectors}, 2},
  };
  return readers;
}

namespace {

const KnownReader* FindReader(const std::string& name) {
  const auto& readers = KnownReaders();
  const auto it = std::find_if(readers.begin(), readers.end(),
                               [&](const KnownReader& r) { return r.name == name; });
  return it == readers.end() ? nullptr : &*it;
}

std::string KnownNames() {
  std::string names;
  for (const auto& reader : KnownReaders())
    names += (names.empty() ? "" : ", ") + reader.name;
  return names;
}

}  // namespace

arrow::Result<std::vector<std::string>> ParseReaderNames(
    const std::vector<std::string>& given) {
  std::vector<std::string> names;
  for (const auto& raw : given) {
    const std::string name = AsciiLower(raw);
    if (FindReader(name) == nullptr) {
      return InvalidInputError("unknown reader '", raw, "'; the known readers are ",
                               KnownNames());
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::vector<std::string> UnreadableBy(
    const std::string& name, const Protocol& protocol,
    const std::map<std::string, std::string>& configuration) {
  const KnownReader* reader = FindReader(name);
  if (reader == nullptr) return {"(unknown reader)"};
  const auto reads = [&](const std::string& feature_name) {
    const auto feature = FeatureNamed(feature_name);
    return feature && std::find(reader->reads.begin(), reader->reads.end(), *feature) !=
                          reader->reads.end();
  };
  if (protocol.min_reader_version < 3) {
    if (protocol.min_reader_version > reader->max_legacy_reader_version) {
      return {"reader version " + std::to_string(protocol.min_reader_version)};
    }
    // Reader version 2 is column mapping; a reader that lacks it misreads a table that
    // uses it.
    const bool mapped =
        ColumnMappingModeOf(configuration).ValueOr(ColumnMappingMode::kNone) !=
        ColumnMappingMode::kNone;
    const std::string mapping = FeatureName(TableFeature::kColumnMapping);
    if (protocol.min_reader_version == 2 && mapped && !reads(mapping))
      return {mapping + " (reader version 2)"};
    return {};
  }
  std::vector<std::string> unreadable;
  for (const auto& feature :
       protocol.reader_features.value_or(std::vector<std::string>{})) {
    if (!reads(feature)) unreadable.push_back(feature);
  }
  return unreadable;
}

arrow::Status CheckReaders(const std::vector<std::string>& readers,
                           const Protocol& protocol,
                           const std::map<std::string, std::string>& configuration) {
  std::string refusals;
  for (const auto& reader : readers) {
    const auto unreadable = UnreadableBy(reader, protocol, configuration);
    if (unreadable.empty()) continue;
    std::string features;
    for (const auto& feature : unreadable)
      features += (features.empty() ? "" : ", ") + feature;
    refusals += (refusals.empty() ? "" : "; ") + reader + " cannot read " + features;
  }
  if (refusals.empty()) return arrow::Status::OK();
  return InvalidInputError(
      "the table would need reader features a declared reader cannot read: ", refusals,
      "; leave out the property that needs them or the reader from --readers (config "
      "'readers'); the table was not changed");
}

}  // namespace ampdelta::delta
