#pragma once

/// \file table_verify.h
/// \brief `ampdelta verify`: check a loaded table against its own records (the block
/// ranges its streams recorded, its backfills' partitions and records, the files its log
/// names) and, given the chain, against the server's canonical hashes.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::loader {

/// \brief One problem the verifier found.
struct VerifyFinding {
  /// `missing_file`, `size_mismatch`, `gap`, `duplicate_block`, `fork_mix`,
  /// `stale_hash`, `unknown_block`, `batch_id`, `unreadable_file`, `stale_record` (a
  /// backfill record whose rows are gone), `missing_rows` (a backfill partition holding
  /// fewer rows than its commit loaded), `foreign_rows` (another writer's rows where a
  /// stream took the table over).
  std::string kind;
  std::string message;
  /// The data file concerned, when one is (table-relative).
  std::string file;
  /// The blocks concerned, when they are known.
  std::optional<uint64_t> first_block;
  std::optional<uint64_t> last_block;
};

/// \brief The chain's hashes of blocks [first, last] (block number -> `0x…` lower-case).
using CanonicalHashes = std::function<arrow::Result<std::map<uint64_t, std::string>>(
    uint64_t first, uint64_t last)>;

/// \brief What to check.
struct VerifyOptions {
  std::string block_column = "block_num";
  /// The column holding each row's block hash; empty: `block_hash` when the table has
  /// it, else `hash`.
  std::string hash_column;
  /// One row per block (a blocks table): any block between the first and the last with
  /// no row is a gap, any with two rows a duplicate. nullopt: when the hash column is
  /// `hash` (a blocks table's own hash).
  std::optional<bool> one_row_per_block;
  /// When set, every row's hash is compared with the chain's.
  CanonicalHashes canonical;
  /// Findings reported per kind at most (the count is always exact).
  size_t max_per_kind = 20;
};

/// \brief Per app id, per network: blocks as [first, last] runs.
using BlockRuns =
    std::map<std::string,
             std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>>>;

/// \brief The verifier's report.
struct VerifyReport {
  int64_t version = 0;
  int64_t files = 0;
  int64_t rows = 0;
  std::optional<uint64_t> first_block;
  std::optional<uint64_t> last_block;
  /// Distinct blocks with rows.
  int64_t blocks = 0;
  /// Per stream (`<app id>`), per network: the recorded blocks.
  BlockRuns recorded;
  /// Per backfill (`<app id>` of its query's stream), per network: the blocks the table
  /// holds.
  BlockRuns backfilled;
  std::string hash_column;
  bool one_row_per_block = false;
  bool checked_hashes = false;
  std::vector<VerifyFinding> findings;
  /// Findings per kind, including those not listed.
  std::map<std::string, int64_t> counts;
};

/// \brief Verify the latest version of the table in `store`.
///
/// Errors (not findings): kNotFound when there is no table, kInvalidInput for a block or
/// hash column the table lacks, the canonical source's own errors.
arrow::Result<VerifyReport> VerifyTable(std::shared_ptr<storage::ObjectStore> store,
                                        const VerifyOptions& options);

}  // namespace ampdelta::loader
