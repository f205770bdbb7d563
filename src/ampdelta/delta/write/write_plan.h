#pragma once

/// \file write_plan.h
/// \brief What a table write will do, decided before any data is read: the table schema
/// and partitioning the files get, and the metadata and protocol the commit carries. A
/// pure function of the table's snapshot, the incoming schema and the write's options.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/write/table_write_options.h"

namespace ampdelta::delta {

/// \brief The outcome of PlanWrite.
struct WritePlan {
  /// Mode ignore on an existing table: nothing is written.
  bool skipped = false;
  /// The partition columns the write asked for, resolved against the data (their case).
  std::vector<std::string> partition_by;
  /// The schema and partitioning of the files written.
  std::shared_ptr<arrow::Schema> table_schema;
  std::vector<std::string> partition_columns;
  /// Set when the commit changes them (a new table, new columns, a replaced schema).
  std::optional<Metadata> new_metadata;
  std::optional<Protocol> new_protocol;
  /// The clustering columns of the table after the commit (empty: not clustered), and
  /// the domain that records them when the commit changes them.
  std::vector<std::string> clustering_columns;
  std::optional<DomainMetadata> clustering_domain;
};

/// \brief Plan a write of data with `source_schema` into the table at `table_uri` whose
/// latest snapshot is `snapshot` (null: no table yet).
///
/// \return the plan; ErrorCode::kInvalidInput for a partitioning or schema the table or
///   the data cannot take (the messages are the Python SDK's), kUnsupportedFeature for a
///   table ampdelta cannot write
arrow::Result<WritePlan> PlanWrite(const Snapshot* snapshot,
                                   const arrow::Schema& source_schema,
                                   const TableWriteOptions& options,
                                   const std::string& table_uri);

}  // namespace ampdelta::delta
