#pragma once

/// \file table_feature.h
/// \brief The table features of the Delta protocol (PROTOCOL.md "Table Features") as
/// one enum and one static table: each feature's name in the log, whether readers must
/// know it, the legacy protocol versions that imply it, and what ampdelta supports of it.
/// Everything else names a feature through TableFeature, never as a string.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief A table feature ampdelta knows by name (supported or not).
enum class TableFeature : uint8_t {
  kAppendOnly,
  kInvariants,
  kCheckConstraints,
  kChangeDataFeed,
  kGeneratedColumns,
  kColumnMapping,
  kIdentityColumns,
  kTimestampNtz,
  kDeletionVectors,
  kV2Checkpoint,
  kVacuumProtocolCheck,
  kTypeWidening,
  kTypeWideningPreview,
  kDomainMetadata,
  kRowTracking,
  kClustering,
  kInCommitTimestamp,
  kAllowColumnDefaults,
  kIcebergCompatV1,
  kIcebergCompatV2,
  kVariantType,
  kVariantTypePreview,
};

/// \brief Whether a feature is listed for writers only or for readers and writers.
enum class FeatureKind : uint8_t { kWriterOnly, kReaderWriter };

/// \brief What the protocol and ampdelta say of one feature.
struct TableFeatureInfo {
  TableFeature feature;
  /// The feature's name in `readerFeatures` / `writerFeatures`.
  std::string_view name;
  FeatureKind kind;
  /// The lowest legacy reader / writer version that implies the feature (0: none).
  int legacy_reader_version = 0;
  int legacy_writer_version = 0;
  /// ampdelta implements its reading rules (reader-writer features only).
  bool readable = false;
  /// ampdelta implements its writing rules, or carries it safely while unused (the
  /// writer's checks, protocol_support.h, refuse a table that uses such a feature).
  bool writable = false;
};

/// \brief Every feature ampdelta knows, in enum order.
const std::vector<TableFeatureInfo>& TableFeatureInfos();

/// \brief The static information of `feature`.
const TableFeatureInfo& InfoOf(TableFeature feature);

/// \brief The feature's name in the log (`deletionVectors`, …).
std::string FeatureName(TableFeature feature);

/// \brief The feature named `name` in a protocol, when ampdelta knows it.
std::optional<TableFeature> FeatureNamed(std::string_view name);

/// \brief Return the writer features a protocol has: listed at writer version 7, else
/// the ones its legacy writer version implies.
std::vector<std::string> ImpliedWriterFeatures(const Protocol& protocol);

/// \brief Return the reader features a protocol has: listed at reader version 3, else
/// the ones its legacy reader version implies (2: column mapping).
std::vector<std::string> ImpliedReaderFeatures(const Protocol& protocol);

/// \brief Return true when the protocol has writer feature `feature`.
bool HasWriterFeature(const Protocol& protocol, TableFeature feature);

}  // namespace ampdelta::delta
