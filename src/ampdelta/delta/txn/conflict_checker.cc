#include "ampdelta/delta/txn/conflict_checker.h"

#include <algorithm>
#include <memory>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

const char* IsolationLevelName(IsolationLevel level) {
  return level == IsolationLevel::kSerializable ? "Serializable" : "WriteSerializable";
}

arrow::Result<Rebase> CheckWinner(const std::vector<Action>& winner, Version version,
                                  IsolationLevel isolation, const ReadSet& read,
                                  const WriteSet& write, const Watch& watch) {
  Rebase rebase;
  // Files re-added as they are (re-tagged, dataChange=false) must still exist: a
  // concurrent remove of one, even by a compaction, would be undone by the re-add.
  auto ours_removed = [&](const std::string& key) {
    return write.removes.count(key) != 0 || write.readds.count(key) != 0;
  };
  bool winner_blind = false;
  for (const auto& action : winner) {
    if (const auto* info = std::get_if<CommitInfo>(&action)) {
      winner_blind = info->is_blind_append.value_or(false);
    }
  }
  // Another writer of the same application is reported as such below, never as a rollback
  // (resuming from the table would adopt its progress).
  const bool same_app =
      write.app_id &&
      std::any_of(winner.begin(), winner.end(), [&](const Action& action) {
        const auto* txn = std::get_if<SetTransaction>(&action);
        return txn != nullptr && txn->app_id == *write.app_id;
      });
  if ((!watch.keys.empty() || !watch.tag_keys.empty()) && !same_app) {
    for (const auto& action : winner) {
      const auto* remove = std::get_if<Remove>(&action);
      if (remove == nullptr || !remove->data_change) continue;
      const std::string key = DecodeLogPath(remove->path);
      if (watch.keys.count(key) != 0 || watch.Tagged(remove->tags)) {
        return CommitConflictError(
                   "concurrent commit ", version, " removed file ", key,
                   " that this transaction builds on (a restore or delete took it back)")
            .WithDetail(
                std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kRolledBack));
      }
    }
    // A file carrying the tag added as a data change by someone else (a restore giving
    // back progress taken earlier): what the table records moved, so resume from it.
    for (const auto& action : winner) {
      const auto* add = std::get_if<Add>(&action);
      if (add == nullptr || !add->data_change || !watch.Tagged(add->tags)) continue;
      return CommitConflictError(
                 "concurrent commit ", version, " added file ", DecodeLogPath(add->path),
                 " recording progress of this transaction's application (a restore "
                 "gave it back)")
          .WithDetail(
              std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kRolledBack));
    }
  }
  for (const auto& action : winner) {
    if (std::holds_alternative<Protocol>(action)) {
      return CommitConflictError("the table's protocol changed in concurrent commit ",
                                 version);
    }
    if (std::holds_alternative<Metadata>(action)) {
      return CommitConflictError(
          "the table's metadata (schema or properties) changed in concurrent commit ",
          version);
    }
    if (const auto* txn = std::get_if<SetTransaction>(&action)) {
      if (write.app_id && txn->app_id == *write.app_id) {
        return CommitConflictError("application '", txn->app_id, "' committed version ",
                                   txn->version, " concurrently (commit ", version,
                                   "); another writer runs the same app")
            .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                      kConcurrentApp));
      }
    }
    if (const auto* domain = std::get_if<DomainMetadata>(&action)) {
      // (Another writer of the same application is reported as such, at its txn.)
      if (write.domains.count(domain->domain) != 0 && !same_app) {
        return CommitConflictError("domain '", domain->domain,
                                   "' changed in concurrent commit ", version);
      }
    }
    if (const auto* remove = std::get_if<Remove>(&action)) {
      const std::string key = DecodeLogPath(remove->path);
      if (ours_removed(key)) {
        // Replacing the whole table, a file someone else removed first needs no remove of
        // ours (what replaced it is removed below, with the winner's adds) — unless this
        // transaction adds it back as it is.
        if (write.replace_whole_table && write.readds.count(key) == 0) {
          rebase.superseded.insert(key);
          continue;
        }
        return CommitConflictError("file ", key, " was removed by concurrent commit ",
                                   version, " that this transaction also removes");
      }
      if (remove->data_change && (read.files.count(key) != 0 || read.whole_table)) {
        return CommitConflictError(
            "file ", key, " that this transaction read was removed by concurrent commit ",
            version);
      }
      // Replacing the whole table, a file it keeps must still be there: what a compaction
      // put in its place is removed with the winner's adds, and its rows with it.
      if (write.replace_whole_table && read.files.count(key) != 0) {
        return CommitConflictError(
            "file ", key,
            " that this transaction keeps was rewritten by concurrent "
            "commit ",
            version);
      }
    }
    if (const auto* add = std::get_if<Add>(&action)) {
      // Write-serializable: blind appends do not invalidate what we read, but other data
      // changes to the table we read in full do.
      if (add->data_change && read.whole_table && !winner_blind &&
          !write.replace_whole_table) {
        return CommitConflictError(
            "concurrent commit ", version,
            " changed data this transaction read; retry the operation");
      }
      if (add->data_change && isolation == IsolationLevel::kSerializable) {
        return CommitConflictError(
            "concurrent commit ", version,
            " added data while this transaction required serializable isolation; "
            "retry the operation");
      }
      // Everything a concurrent commit added goes, a compaction's output too (it holds
      // the rows of files this transaction removes), but never a file this one adds
      // itself.
      if (write.replace_whole_table && write.adds.count(DecodeLogPath(add->path)) == 0) {
        rebase.winner_adds.push_back(*add);
      }
    }
  }
  return rebase;
}

}  // namespace ampdelta::delta
