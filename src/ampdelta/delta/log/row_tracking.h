#pragma once

/// \file row_tracking.h
/// \brief Row tracking (PROTOCOL.md "Row Tracking", writer feature `rowTracking`): every
/// row has a stable row ID and row commit version. A file's rows get fresh ones from its
/// `add` (`baseRowId` + the row's position, `defaultRowCommitVersion`), handed out above
/// the `delta.rowTracking` domain's high-water mark as the commit lands
/// (transaction.cc). With `delta.enableRowTracking=true` a rewrite keeps them: the rows
/// it copies carry their IDs and commit versions in two materialized columns after the
/// table's own (named in the table's configuration, never in its schema); rows it
/// updates keep their ID and take the new commit version; new rows carry nulls.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

inline constexpr const char* kRowTrackingDomain = "delta.rowTracking";
inline constexpr const char* kEnableRowTrackingKey = "delta.enableRowTracking";
inline constexpr const char* kMaterializedRowIdKey =
    "delta.rowTracking.materializedRowIdColumnName";
inline constexpr const char* kMaterializedRowCommitVersionKey =
    "delta.rowTracking.materializedRowCommitVersionColumnName";

/// \brief The two columns a table keeps stable row IDs and row commit versions in
/// (int64, nullable), in that order.
struct MaterializedRowColumns {
  std::string row_id;
  std::string row_commit_version;

  std::vector<std::string> names() const { return {row_id, row_commit_version}; }
};

/// \brief Return true when `configuration` has `delta.enableRowTracking=true`.
bool RowTrackingEnabled(const std::map<std::string, std::string>& configuration);

/// \brief Return true when `configuration` has `delta.rowTrackingSuspended=true`, which
/// Spark's DROP FEATURE rowTracking sets while it takes the IDs away: new files get none.
bool RowTrackingSuspended(const std::map<std::string, std::string>& configuration);

/// \brief Return the materialized columns of a table with row tracking enabled, nullopt
/// when it is off.
///
/// Errors: kCorruptLog when a name is missing; kInvalidInput when a column of `schema`
/// has one of the names (PROTOCOL.md: they stay distinct from every column).
arrow::Result<std::optional<MaterializedRowColumns>> MaterializedColumns(
    const std::map<std::string, std::string>& configuration, const arrow::Schema& schema);

/// \brief Name the materialized columns in `configuration` where it does not yet
/// (`_row-id-col-<uuid>`, `_row-commit-version-col-<uuid>`, as Spark names them).
void NameMaterializedColumns(std::map<std::string, std::string>* configuration);

/// \brief Return the row ID high-water mark `domains` record (-1: none recorded).
/// Errors: kCorruptLog when the `delta.rowTracking` domain does not parse.
arrow::Result<int64_t> RowIdHighWaterMark(
    const std::map<std::string, DomainMetadata>& domains);

/// \brief Return the high-water mark `domain` records when it is the row tracking
/// domain, else nullopt.
arrow::Result<std::optional<int64_t>> RowIdHighWaterMarkIn(const DomainMetadata& domain);

/// \brief Return the `delta.rowTracking` domain recording `high_water_mark` (with the
/// `domainName` Spark writes beside it).
DomainMetadata RowIdHighWaterMarkDomain(int64_t high_water_mark);

/// \brief Return true when the table's files carry the version that added them
/// (`defaultRowCommitVersion`): row tracking, and the preview of type widening
/// (`typeWidening-preview`), whose readers tell files written before a type change by it.
bool KeepsRowCommitVersions(const Protocol& protocol);

/// \brief Give every file of `files` without a `defaultRowCommitVersion` `version`, the
/// commit's; files that have one (re-added with a deletion vector, or restored) keep it.
void AssignCommitVersions(int64_t version, const std::vector<Add*>& files);

/// \brief Give every file of `files` without a `baseRowId` fresh row IDs above
/// `high_water_mark`; files that have one keep theirs. Return the new high-water mark.
///
/// Errors: kInvalidInput when such a file's statistics lack numRecords (its row count
/// is what its IDs span).
arrow::Result<int64_t> AssignFreshRowIds(int64_t high_water_mark,
                                         const std::vector<Add*>& files);

/// \brief Return `batch` without the columns named in `names` (materialized columns a
/// rewrite's rows carry), sharing its arrays.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithoutColumns(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::vector<std::string>& names);

/// \brief Return `rows` (the table's columns) with the materialized columns appended:
/// those `carried` has (a batch the table's rows came in, with the columns after its
/// own), nulls (fresh IDs and commit versions) for those it lacks.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithMaterializedColumns(
    const std::shared_ptr<arrow::RecordBatch>& rows,
    const std::shared_ptr<arrow::RecordBatch>& carried,
    const MaterializedRowColumns& columns);

}  // namespace ampdelta::delta
