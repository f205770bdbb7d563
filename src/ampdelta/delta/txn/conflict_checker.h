#pragma once

/// \file conflict_checker.h
/// \brief Whether a transaction can commit after a concurrent commit won its version
/// (PROTOCOL.md leaves this to writers; the rules follow Delta's isolation levels), and
/// how it rebases: a pure function of the winner's actions, the isolation level, what the
/// transaction read and what it writes.

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

/// The ErrorDetail subcode of a kCommitConflict raised by Transaction::WatchRemovals.
inline constexpr const char* kRolledBack = "rolled_back";
/// The ErrorDetail subcode of a kCommitConflict with a concurrent commit of the same
/// application id (`txn`): another writer runs the same stream or job.
inline constexpr const char* kConcurrentApp = "concurrent_app";
/// The ErrorDetail subcode of a kCommitConflict of a commit that creates a table or
/// nothing (Transaction::CreateOnly) when another writer created it meanwhile.
inline constexpr const char* kTableCreatedConcurrently = "table_created_concurrently";

/// \brief Return a kCommitConflict error whose message is `args`.
template <typename... Args>
arrow::Status CommitConflictError(Args&&... args) {
  return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError,
                   std::forward<Args>(args)...);
}

/// \brief How the reads of a transaction must hold against concurrent commits.
enum class IsolationLevel : uint8_t {
  /// Delta's default: a concurrent blind append never conflicts; other concurrent data
  /// changes to what was read do.
  kWriteSerializable,
  /// Any concurrent data change conflicts, blind appends included (a merge must not miss
  /// rows added meanwhile with the same keys).
  kSerializable,
};

/// \brief Return the name commitInfo.isolationLevel records.
const char* IsolationLevelName(IsolationLevel level);

/// \brief What a transaction's result depends on.
struct ReadSet {
  /// Every file of the read snapshot (a delete or merge over the whole table).
  bool whole_table = false;
  /// Table-relative keys of the files read.
  std::set<std::string> files;
};

/// \brief What a transaction writes, as concurrent commits are checked against it.
struct WriteSet {
  std::set<std::string> removes;
  /// Files re-added as they are (re-tagged, dataChange=false): they must still exist.
  std::set<std::string> readds;
  /// Every file added (re-adds included).
  std::set<std::string> adds;
  std::set<std::string> domains;
  /// The application id of the transaction's `txn`.
  std::optional<std::string> app_id;
  /// The write replaces the whole table (overwrite, restore): it rebases over winners.
  bool replace_whole_table = false;
};

/// \brief Progress the transaction builds on (a stream's recorded ranges): a concurrent
/// commit taking it back is reported with subcode kRolledBack.
struct Watch {
  /// Table-relative keys of watched files.
  std::set<std::string> keys;
  /// Files whose removes or data-change adds carry one of these tags are watched too.
  std::set<std::string> tag_keys;

  /// \brief Return true when `tags` holds one of tag_keys.
  bool Tagged(const std::optional<NullableStringMap>& tags) const {
    if (!tags) return false;
    for (const auto& key : tag_keys) {
      if (tags->count(key) != 0) return true;
    }
    return false;
  }
};

/// \brief How a whole-table replacement rebases over a winner it does not conflict with.
struct Rebase {
  /// Files the transaction removes that the winner already removed: drop those removes.
  std::set<std::string> superseded;
  /// Files the winner added: remove them too.
  std::vector<Add> winner_adds;
};

/// \brief Check one winning commit (`version`) against the transaction.
///
/// \return the rebase; ErrorCode::kCommitConflict naming the conflict, with subcode
///   kConcurrentApp (a `txn` of the same application) or kRolledBack (watched progress
///   taken back)
arrow::Result<Rebase> CheckWinner(const std::vector<Action>& winner, Version version,
                                  IsolationLevel isolation, const ReadSet& read,
                                  const WriteSet& write, const Watch& watch);

}  // namespace ampdelta::delta
