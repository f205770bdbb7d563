#include "ampdelta/delta/txn/conflict_checker.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

const char* IsolationLevelName(IsolationLevel level) {
  return level == IsolationLevel::kSerializable ? "Serializable" : "WriteSerializable";
}

namespace {

// One winning commit checked against the transaction, action by action.
class WinnerCheck {
 public:
  WinnerCheck(const std::vector<Action>& winner, Version version,
              IsolationLevel isolation, const ReadSet& read, const WriteSet& write,
              const Watch& watch)
      : winner_(winner),
        version_(version),
        isolation_(isolation),
        read_(read),
        write_(write),
        watch_(watch),
        winner_blind_(IsBlindAppend(winner)),
        same_app_(RecordsApp(winner, write.app_id)) {}

  arrow::Result<Rebase> Run() {
    // Another writer of the same application is reported as such below, never as a
    // rollback (resuming from the table would adopt its progress).
    if ((!watch_.keys.empty() || !watch_.tag_keys.empty()) && !same_app_) {
      ARROW_RETURN_NOT_OK(CheckRollback());
    }
    Rebase rebase;
    for (const auto& action : winner_) {
      ARROW_RETURN_NOT_OK(CheckTableChange(action));
      if (const auto* remove = std::get_if<Remove>(&action)) {
        ARROW_RETURN_NOT_OK(CheckRemove(*remove, &rebase));
      }
      if (const auto* add = std::get_if<Add>(&action)) {
        ARROW_RETURN_NOT_OK(CheckAdd(*add, &rebase));
      }
    }
    return rebase;
  }

 private:
  static bool IsBlindAppend(const std::vector<Action>& winner) {
    bool blind = false;
    for (const auto& action : winner) {
      if (const auto* info = std::get_if<CommitInfo>(&action)) {
        blind = info->is_blind_append.value_or(false);
      }
    }
    return blind;
  }

  static bool RecordsApp(const std::vector<Action>& winner,
                         const std::optional<std::string>& app_id) {
    return app_id && std::any_of(winner.begin(), winner.end(), [&](const Action& action) {
             const auto* txn = std::get_if<SetTransaction>(&action);
             return txn != nullptr && txn->app_id == *app_id;
           });
  }

  // Watched progress taken back (a restore or delete removing a watched file) or given
  // back (a file carrying a watched tag added as a data change by someone else): what
  // the table records moved, so resume from it.
  arrow::Status CheckRollback() const {
    for (const auto& action : winner_) {
      const auto* remove = std::get_if<Remove>(&action);
      if (remove == nullptr || !remove->data_change) continue;
      const std::string key = DecodeLogPath(remove->path);
      if (watch_.keys.count(key) != 0 || watch_.Tagged(remove->tags)) {
        return RolledBack("concurrent commit ", version_, " removed file ", key,
                          " that this transaction builds on (a restore or delete took it "
                          "back)");
      }
    }
    for (const auto& action : winner_) {
      const auto* add = std::get_if<Add>(&action);
      if (add == nullptr || !add->data_change || !watch_.Tagged(add->tags)) continue;
      return RolledBack("concurrent commit ", version_, " added file ",
                        DecodeLogPath(add->path),
                        " recording progress of this transaction's application (a "
                        "restore gave it back)");
    }
    return arrow::Status::OK();
  }

  template <typename... Args>
  static arrow::Status RolledBack(Args&&... args) {
    return CommitConflictError(std::forward<Args>(args)...)
        .WithDetail(
            std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict, kRolledBack));
  }

  // The protocol, the metadata, the application's txn or a domain this commit sets.
  arrow::Status CheckTableChange(const Action& action) const {
    if (std::holds_alternative<Protocol>(action)) {
      return CommitConflictError("the table's protocol changed in concurrent commit ",
                                 version_);
    }
    if (std::holds_alternative<Metadata>(action)) {
      return CommitConflictError(
          "the table's metadata (schema or properties) changed in concurrent commit ",
          version_);
    }
    if (const auto* txn = std::get_if<SetTransaction>(&action)) {
      if (write_.app_id && txn->app_id == *write_.app_id) {
        return CommitConflictError("application '", txn->app_id, "' committed version ",
                                   txn->version, " concurrently (commit ", version_,
                                   "); another writer runs the same app")
            .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kCommitConflict,
                                                      kConcurrentApp));
      }
    }
    if (const auto* domain = std::get_if<DomainMetadata>(&action)) {
      // (Another writer of the same application is reported as such, at its txn.)
      if (write_.domains.count(domain->domain) != 0 && !same_app_) {
        return CommitConflictError("domain '", domain->domain,
                                   "' changed in concurrent commit ", version_);
      }
    }
    return arrow::Status::OK();
  }

  arrow::Status CheckRemove(const Remove& remove, Rebase* rebase) const {
    const std::string key = DecodeLogPath(remove.path);
    // Files re-added as they are (re-tagged, dataChange=false) must still exist: a
    // concurrent remove of one, even by a compaction, would be undone by the re-add.
    if (write_.removes.count(key) != 0 || write_.readds.count(key) != 0) {
      // Replacing the whole table, a file someone else removed first needs no remove of
      // ours (what replaced it is removed with the winner's adds) — unless this
      // transaction adds it back as it is.
      if (write_.replace_whole_table && write_.readds.count(key) == 0) {
        rebase->superseded.insert(key);
        return arrow::Status::OK();
      }
      return CommitConflictError("file ", key, " was removed by concurrent commit ",
                                 version_, " that this transaction also removes");
    }
    if (remove.data_change && (read_.files.count(key) != 0 || read_.whole_table)) {
      return CommitConflictError(
          "file ", key, " that this transaction read was removed by concurrent commit ",
          version_);
    }
    // Replacing the whole table, a file it keeps must still be there: what a compaction
    // put in its place is removed with the winner's adds, and its rows with it.
    if (write_.replace_whole_table && read_.files.count(key) != 0) {
      return CommitConflictError("file ", key,
                                 " that this transaction keeps was rewritten by "
                                 "concurrent commit ",
                                 version_);
    }
    return arrow::Status::OK();
  }

  arrow::Status CheckAdd(const Add& add, Rebase* rebase) const {
    // Write-serializable: blind appends do not invalidate what we read, but other data
    // changes to the table we read in full do.
    if (add.data_change && read_.whole_table && !winner_blind_ &&
        !write_.replace_whole_table) {
      return CommitConflictError(
          "concurrent commit ", version_,
          " changed data this transaction read; retry the operation");
    }
    if (add.data_change && isolation_ == IsolationLevel::kSerializable) {
      return CommitConflictError(
          "concurrent commit ", version_,
          " added data while this transaction required serializable isolation; "
          "retry the operation");
    }
    // Everything a concurrent commit added goes, a compaction's output too (it holds the
    // rows of files this transaction removes), but never a file this one adds itself.
    if (write_.replace_whole_table && write_.adds.count(DecodeLogPath(add.path)) == 0) {
      rebase->winner_adds.push_back(add);
    }
    return arrow::Status::OK();
  }

  const std::vector<Action>& winner_;
  const Version version_;
  const IsolationLevel isolation_;
  const ReadSet& read_;
  const WriteSet& write_;
  const Watch& watch_;
  const bool winner_blind_;
  const bool same_app_;
};

}  // namespace

arrow::Result<Rebase> CheckWinner(const std::vector<Action>& winner, Version version,
                                  IsolationLevel isolation, const ReadSet& read,
                                  const WriteSet& write, const Watch& watch) {
  return WinnerCheck(winner, version, isolation, read, write, watch).Run();
}

}  // namespace ampdelta::delta
