#pragma once

/// \file clustering.h
/// \brief Clustered tables (PROTOCOL.md "Clustered Table", Liquid clustering): the
/// `clustering` writer feature, and the clustering columns in domain `delta.clustering`
/// (`{"clusteringColumns":[["block_num"]]}`, column paths as Spark writes them). Files a
/// clustering optimize wrote carry `clusteringProvider: "liquid"`.

#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

class Snapshot;

inline constexpr const char* kClusteringDomain = "delta.clustering";
inline constexpr const char* kLiquidProvider = "liquid";

/// \brief The table's clustering columns (top-level names); empty when it is not
/// clustered. Errors: kCorruptLog (a domain that does not parse), kUnsupportedFeature
/// (a nested clustering column).
arrow::Result<std::vector<std::string>> ClusteringColumns(const Snapshot& snapshot);

/// \brief Resolve `columns` against `schema` (case-insensitively, to the schema's
/// spelling) for clustering: each must exist once, be a top-level primitive column that
/// statistics cover, and the table must not be partitioned. Errors: kInvalidInput.
arrow::Result<std::vector<std::string>> ResolveClusteringColumns(
    const std::vector<std::string>& columns, const arrow::Schema& schema,
    const std::vector<std::string>& partition_columns);

/// \brief The domain action that records `columns` (top-level columns of `schema`) as
/// the clustering columns, by physical name under column mapping.
DomainMetadata ClusteringDomain(const std::vector<std::string>& columns,
                                const arrow::Schema& schema);

}  // namespace ampdelta::delta
