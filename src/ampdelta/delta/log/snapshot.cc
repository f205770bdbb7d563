#include "ampdelta/delta/log/snapshot.h"

#include <algorithm>
#include <cctype>
#include <deque>

#include <arrow/buffer.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/checkpoint_reader.h"
#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/storage/location.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

// Reconciles actions in log order (PROTOCOL.md "Action Reconciliation"). File actions
// are collected in log order and reconciled at the end by a stable sort on their key:
// the last action of each key wins. A checkpoint this library wrote is sorted already,
// so loading one costs a pass over its files, not a hash map of them and a sort.
struct Snapshot::ReplayState {
  std::optional<Protocol> protocol;
  std::optional<Metadata> metadata;
  std::map<std::string, SetTransaction> txns;
  std::map<std::string, DomainMetadata> domains;

  // One add or remove, keyed by its file key (+ DV id).
  struct FileAction {
    std::string_view key;  // the action's own path, or an entry of owned_keys
    std::shared_ptr<const Add> add;
    std::shared_ptr<const Remove> remove;
  };
  std::vector<FileAction> file_actions;
  std::deque<std::string> owned_keys;  // a deque: growing it moves no key

  static std::string Key(const std::string& file_key,
                         const std::optional<DeletionVectorDescriptor>& dv) {
    return dv ? file_key + "\n" + dv->UniqueId() : file_key;
  }

  template <typename KeyFn>
  std::string_view KeyOf(const std::string& path,
                         const std::optional<DeletionVectorDescriptor>& dv,
                         const KeyFn& key_of) {
    // A relative path with nothing to decode is its own key (nearly every file). One
    // pass over the bytes: find_first_of calls memchr once per byte of the path.
    const bool plain = std::none_of(path.begin(), path.end(),
                                    [](char c) { return c == '%' || c == ':'; });
    if (!dv && plain) return path;
    owned_keys.push_back(Key(key_of(path), dv));
    return owned_keys.back();
  }

  template <typename KeyFn>
  void Apply(Action&& action, const KeyFn& key_of) {
    if (auto* add = std::get_if<Add>(&action)) {
      auto entry = std::make_shared<const Add>(std::move(*add));
      const std::string_view key = KeyOf(entry->path, entry->deletion_vector, key_of);
      file_actions.push_back(FileAction{key, std::move(entry), nullptr});
    } else if (auto* remove = std::get_if<Remove>(&action)) {
      auto entry = std::make_shared<const Remove>(std::move(*remove));
      const std::string_view key = KeyOf(entry->path, entry->deletion_vector, key_of);
      file_actions.push_back(FileAction{key, nullptr, std::move(entry)});
    } else {
      ApplyTableAction(std::move(action));
    }
  }

  // Reconcile the file actions: the live files and the tombstones, each sorted by key.
  void Reconcile(std::vector<std::shared_ptr<const Add>>* files,
                 std::vector<std::shared_ptr<const Remove>>* tombstones) {
    const auto by_key = [](const FileAction& a, const FileAction& b) {
      return a.key < b.key;
    };
    // A checkpoint we wrote arrives as a few sorted runs (its adds, then its
    // tombstones), the commits after it as short ones: merge neighbouring runs, which
    // keeps actions of one key in log order. Input in no order (another engine's
    // checkpoint) is sorted whole, stably.
    constexpr size_t kMaxRuns = 64;
    std::vector<size_t> runs = {0};  // where each sorted run starts
    for (size_t i = 1; i < file_actions.size() && runs.size() <= kMaxRuns; ++i) {
      if (by_key(file_actions[i], file_actions[i - 1])) runs.push_back(i);
    }
    if (runs.size() > kMaxRuns) {
      std::stable_sort(file_actions.begin(), file_actions.end(), by_key);
    } else {
      runs.push_back(file_actions.size());
      const auto at = [this](size_t i) {
        return file_actions.begin() + static_cast<std::ptrdiff_t>(i);
      };
      while (runs.size() > 2) {
        std::vector<size_t> merged;
        for (size_t r = 0; r + 2 < runs.size(); r += 2) {
          std::inplace_merge(at(runs[r]), at(runs[r + 1]), at(runs[r + 2]), by_key);
          merged.push_back(runs[r]);
        }
        if (runs.size() % 2 == 0) merged.push_back(runs[runs.size() - 2]);
        merged.push_back(runs.back());
        runs = std::move(merged);
      }
    }
    files->clear();
    tombstones->clear();
    for (size_t i = 0; i < file_actions.size(); ++i) {
      if (i + 1 < file_actions.size() && file_actions[i + 1].key == file_actions[i].key) {
        continue;  // a later action of the same file wins
      }
      auto& winner = file_actions[i];
      if (winner.add) {
        files->push_back(std::move(winner.add));
      } else {
        tombstones->push_back(std::move(winner.remove));
      }
    }
    file_actions.clear();
    file_actions.shrink_to_fit();
  }

  // Protocol, metadata, txn and domain actions; return false for anything else.
  bool ApplyTableAction(Action&& action) {
    if (auto* p = std::get_if<Protocol>(&action)) {
      protocol = std::move(*p);
    } else if (auto* m = std::get_if<Metadata>(&action)) {
      metadata = std::move(*m);
    } else if (auto* txn = std::get_if<SetTransaction>(&action)) {
      txns[txn->app_id] = std::move(*txn);
    } else if (auto* domain = std::get_if<DomainMetadata>(&action)) {
      if (domain->removed) {
        domains.erase(domain->domain);
      } else {
        domains[domain->domain] = std::move(*domain);
      }
    } else {
      return false;
    }
    return true;
  }
};

namespace {

arrow::Result<std::vector<Action>> ReadCommitActions(storage::ObjectStore& store,
                                                     const ParsedLogPath& commit) {
  ARROW_ASSIGN_OR_RAISE(auto data, store.Get(commit.path));
  return ParseCommit(std::string_view(reinterpret_cast<const char*>(data->data()),
                                      static_cast<size_t>(data->size())),
                     commit.path);
}

// The commit time of a version: the in-commit timestamp when present, else the file time.
int64_t CommitTimestamp(const std::vector<Action>& actions, int64_t file_time) {
  for (const auto& action : actions) {
    if (const auto* info = std::get_if<CommitInfo>(&action)) {
      if (info->in_commit_timestamp) return *info->in_commit_timestamp;
    }
  }
  return file_time;
}

}  // namespace

std::string Snapshot::FileKey(const std::string& log_path) const {
  const std::string scheme = storage::UriScheme(log_path);
  if (scheme.empty()) return DecodeLogPath(log_path);
  // An absolute URI: the store's key when it lies inside this table; a file outside it
  // keeps its canonical location (an add and its remove may spell it differently), which
  // no read of this store finds.
  if (auto key = store_->KeyOf(log_path)) return *key;
  return storage::CanonicalLocation(log_path);
}

std::optional<int64_t> Snapshot::AppTransactionVersion(const std::string& app_id) const {
  auto it = txns_.find(app_id);
  if (it == txns_.end()) return std::nullopt;
  return it->second.version;
}

int64_t Snapshot::SumFileSizes() const {
  // Sizes come from the log: a hostile one must not overflow (undefined behaviour).
  int64_t total = 0;
  for (const auto& file : files_) {
    if (__builtin_add_overflow(total, file.size, &total)) return INT64_MAX;
  }
  return total;
}

std::optional<int64_t> Snapshot::CountLiveRecords() const {
  int64_t total = 0;
  for (const auto& file : files_) {
    // Counts from the log that are out of range or overflow the sum make it unknown.
    const std::optional<int64_t> records = StatsNumRecords(file);
    if (!records || __builtin_add_overflow(total, *records, &total)) return std::nullopt;
    if (file.deletion_vector &&
        __builtin_sub_overflow(total, file.deletion_vector->cardinality, &total)) {
      return std::nullopt;
    }
  }
  return total;
}

arrow::Status Snapshot::Adopt(ReplayState state, Version version, int64_t last_time) {
  const std::string root = store_->root_uri();
  if (!state.protocol) {
    return CorruptLogError(root,
                           "no protocol action up to version " + std::to_string(version));
  }
  if (!state.metadata) {
    return CorruptLogError(root,
                           "no metaData action up to version " + std::to_string(version));
  }
  // Entries sorted by their replay key (file key + DV id), the order Update relies on.
  state.Reconcile(files_.Mutable(), tombstones_.Mutable());
  return AdoptTableState(std::move(*state.protocol), std::move(*state.metadata),
                         std::move(state.txns), std::move(state.domains), version,
                         last_time);
}

arrow::Status Snapshot::AdoptTableState(Protocol protocol, Metadata metadata,
                                        std::map<std::string, SetTransaction> txns,
                                        std::map<std::string, DomainMetadata> domains,
                                        Version version, int64_t last_time) {
  const std::string root = store_->root_uri();
  ARROW_RETURN_NOT_OK(CheckReadSupported(protocol));
  if (metadata.schema_string.empty()) {
    return CorruptLogError(root, "the metaData in effect at version " +
                                     std::to_string(version) + " has no 'schemaString'");
  }
  if (schema_ == nullptr || metadata.schema_string != metadata_.schema_string) {
    ARROW_ASSIGN_OR_RAISE(schema_, SchemaFromJson(metadata.schema_string));
  }
  for (const auto& column : metadata.partition_columns) {
    if (FindFieldIgnoreCase(*schema_, column) < 0) {
      return CorruptLogError(root, "partition column '" + column + "' of version " +
                                       std::to_string(version) +
                                       " is not in the table's schema");
    }
  }
  version_ = version;
  protocol_ = std::move(protocol);
  metadata_ = std::move(metadata);
  properties_ = ParseTableProperties(metadata_.configuration);
  timestamp_ms_ = last_time;
  txns_ = std::move(txns);
  if (properties_.set_transaction_retention_ms) {
    // Expired app transactions are forgotten (delta.setTransactionRetentionDuration).
    const int64_t cutoff = last_time - *properties_.set_transaction_retention_ms;
    for (auto it = txns_.begin(); it != txns_.end();) {
      if (it->second.last_updated && *it->second.last_updated < cutoff) {
        it = txns_.erase(it);
      } else {
        ++it;
      }
    }
  }
  domains_ = std::move(domains);
  return arrow::Status::OK();
}

namespace {

// Position of `key` in a list sorted by replay key, and whether it is there.
template <typename T, typename KeyFn>
std::pair<size_t, bool> Find(const std::vector<std::shared_ptr<const T>>& items,
                             const std::string& key, const KeyFn& key_of) {
  auto it = std::lower_bound(items.begin(), items.end(), key,
                             [&](const std::shared_ptr<const T>& item,
                                 const std::string& k) { return key_of(*item) < k; });
  const size_t index = static_cast<size_t>(it - items.begin());
  return {index, it != items.end() && key_of(**it) == key};
}

}  // namespace

template <typename T, typename KeyFn>
void Snapshot::Upsert(SharedList<T>* list, const std::string& key, T value,
                      const KeyFn& key_of) {
  const auto [index, found] = Find(list->items(), key, key_of);
  auto entry = std::make_shared<const T>(std::move(value));
  std::vector<std::shared_ptr<const T>>* items = list->Mutable();
  if (found) {
    (*items)[index] = std::move(entry);
  } else {
    items->insert(items->begin() + static_cast<std::ptrdiff_t>(index), std::move(entry));
  }
}

template <typename T, typename KeyFn>
void Snapshot::Erase(SharedList<T>* list, const std::string& key, const KeyFn& key_of) {
  const auto [index, found] = Find(list->items(), key, key_of);
  if (!found) return;  // unchanged: the list stays shared
  std::vector<std::shared_ptr<const T>>* items = list->Mutable();
  items->erase(items->begin() + static_cast<std::ptrdiff_t>(index));
}

void Snapshot::ApplyFileAction(Action&& action) {
  auto add_key = [this](const Add& add) {
    return ReplayState::Key(FileKey(add.path), add.deletion_vector);
  };
  auto remove_key = [this](const Remove& remove) {
    return ReplayState::Key(FileKey(remove.path), remove.deletion_vector);
  };
  if (auto* add = std::get_if<Add>(&action)) {
    const std::string key = add_key(*add);
    Erase(&tombstones_, key, remove_key);
    Upsert(&files_, key, std::move(*add), add_key);
  } else if (auto* remove = std::get_if<Remove>(&action)) {
    const std::string key = remove_key(*remove);
    Erase(&files_, key, add_key);
    Upsert(&tombstones_, key, std::move(*remove), remove_key);
  }
}

namespace {

// The commits of `all` whose versions lie in (after, upto].
std::vector<ParsedLogPath> CommitsIn(const std::vector<ParsedLogPath>& all, Version after,
                                     Version upto) {
  std::vector<ParsedLogPath> in;
  for (const auto& commit : all) {
    if (commit.version > after && commit.version <= upto) in.push_back(commit);
  }
  return in;
}

}  // namespace

arrow::Result<std::shared_ptr<Snapshot>> Snapshot::Replay(
    std::shared_ptr<storage::ObjectStore> store, LogSegment segment) {
  auto snapshot = std::shared_ptr<Snapshot>(new Snapshot());
  snapshot->store_ = store;
  const std::string root = store->root_uri();
  auto key_of = [&](const std::string& path) { return snapshot->FileKey(path); };

  ReplayState state;
  std::vector<ParsedLogPath> commits = segment.commits;
  if (segment.checkpoint) {
    // A damaged checkpoint is skipped in favour of an older one or of the commits.
    std::vector<CheckpointFiles> candidates = {*segment.checkpoint};
    candidates.insert(candidates.end(), segment.older_checkpoints.begin(),
                      segment.older_checkpoints.end());
    arrow::Status first_error;
    bool loaded = false;
    std::vector<ParsedLogPath> all_commits;
    for (const auto& candidate : candidates) {
      // Each candidate replays into a state of its own: one that fails half-way leaves
      // nothing behind.
      ReplayState from_checkpoint;
      const arrow::Status read = VisitCheckpoint(*store, candidate, [&](Action&& action) {
        from_checkpoint.Apply(std::move(action), key_of);
        return arrow::Status::OK();
      });
      if (!read.ok()) {
        if (first_error.ok()) first_error = read;
        AMPDELTA_LOG_WARN("delta skipping unreadable checkpoint version=",
                          candidate.version, " table=", root, " error=", read.message());
        continue;
      }
      if (candidate.version != segment.checkpoint->version) {
        // Replaying from an older checkpoint needs every commit after it.
        if (all_commits.empty()) {
          ARROW_ASSIGN_OR_RAISE(all_commits, ListCommits(*store));
        }
        std::vector<ParsedLogPath> needed =
            CommitsIn(all_commits, candidate.version, segment.version);
        if (static_cast<Version>(needed.size()) != segment.version - candidate.version)
          continue;
        commits = std::move(needed);
      }
      state = std::move(from_checkpoint);
      loaded = true;
      break;
    }
    if (!loaded) {
      if (all_commits.empty()) {
        ARROW_ASSIGN_OR_RAISE(all_commits, ListCommits(*store));
      }
      std::vector<ParsedLogPath> needed = CommitsIn(all_commits, -1, segment.version);
      const bool complete = static_cast<Version>(needed.size()) == segment.version + 1 &&
                            (needed.empty() || needed.front().version == 0);
      if (!complete) {
        return CorruptLogError(root, "checkpoint " +
                                         std::to_string(segment.checkpoint->version) +
                                         " cannot be read (" + first_error.message() +
                                         ") and the commits before it are gone");
      }
      commits = std::move(needed);
    }
  }

  int64_t last_time = segment.checkpoint && !segment.checkpoint->files.empty()
                          ? segment.checkpoint->files.front().last_modified_ms
                          : 0;
  for (const auto& commit : commits) {
    ARROW_ASSIGN_OR_RAISE(auto actions, ReadCommitActions(*store, commit));
    last_time = CommitTimestamp(actions, commit.last_modified_ms);
    for (auto& action : actions) state.Apply(std::move(action), key_of);
  }

  ARROW_RETURN_NOT_OK(snapshot->Adopt(std::move(state), segment.version, last_time));
  snapshot->segment_ = std::make_shared<const LogSegment>(std::move(segment));
  return snapshot;
}

arrow::Result<std::shared_ptr<const Snapshot>> Snapshot::Load(
    std::shared_ptr<storage::ObjectStore> store, const SnapshotOptions& options) {
  std::optional<Version> version = options.version;
  if (options.timestamp_ms) {
    if (version) return InvalidInputError("give a version or a timestamp, not both");
    ARROW_ASSIGN_OR_RAISE(auto commits, ListCommits(*store));
    if (commits.empty()) return NotFoundError("no Delta table at ", store->root_uri());
    std::optional<Version> found;
    for (const auto& commit : commits) {
      int64_t time = commit.last_modified_ms;
      // In-commit timestamps, when the table has them, beat file times.
      ARROW_ASSIGN_OR_RAISE(auto actions, ReadCommitActions(*store, commit));
      time = CommitTimestamp(actions, time);
      if (time <= *options.timestamp_ms) found = commit.version;
    }
    if (!found) {
      return InvalidInputError("timestamp ", *options.timestamp_ms,
                               " is before the earliest available version of ",
                               store->root_uri());
    }
    version = found;
  }
  ARROW_ASSIGN_OR_RAISE(LogSegment segment, BuildLogSegment(*store, version));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Replay(std::move(store), std::move(segment)));
  return std::shared_ptr<const Snapshot>(std::move(snapshot));
}

arrow::Result<std::shared_ptr<const Snapshot>> Snapshot::Update() const {
  // Probe the next versions directly: one HEAD per new commit, whatever the log's length.
  std::vector<ParsedLogPath> commits;
  for (Version v = version_ + 1;; ++v) {
    auto head = store_->Head(CommitPath(v));
    if (!head.ok()) {
      if (IsError(head.status(), ErrorCode::kNotFound)) break;
      return head.status();
    }
    ParsedLogPath parsed;
    parsed.path = CommitPath(v);
    parsed.type = LogFileType::kCommit;
    parsed.version = v;
    parsed.size = head->size;
    parsed.last_modified_ms = head->last_modified_ms;
    commits.push_back(std::move(parsed));
  }
  if (commits.empty()) {
    // No next commit: either nothing changed, or the log was cleaned up past this version
    // (an idle reader older than the log retention). A newer checkpoint tells them apart.
    const auto checkpoint = ReadLastCheckpointHint(*store_);
    if (checkpoint && *checkpoint > version_) return Load(store_);
    return shared_from_this();
  }
  // New commits must follow this version without gaps; otherwise load from scratch.
  for (size_t i = 0; i < commits.size(); ++i) {
    if (commits[i].version != version_ + 1 + static_cast<Version>(i)) {
      return Load(store_);
    }
  }
  // The new snapshot shares every unchanged file entry with this one; only the new
  // commits' actions are applied, so the cost follows what changed, not the table's size.
  auto updated = std::shared_ptr<Snapshot>(new Snapshot(*this));
  ReplayState table;  // protocol, metadata, txns and domains only; files apply in place
  table.protocol = protocol_;
  table.metadata = metadata_;
  table.txns = txns_;
  table.domains = domains_;
  int64_t last_time = timestamp_ms_;
  for (const auto& commit : commits) {
    ARROW_ASSIGN_OR_RAISE(auto actions, ReadCommitActions(*store_, commit));
    last_time = CommitTimestamp(actions, commit.last_modified_ms);
    for (auto& action : actions) {
      if (std::holds_alternative<Add>(action) || std::holds_alternative<Remove>(action)) {
        updated->ApplyFileAction(std::move(action));
      } else {
        table.ApplyTableAction(std::move(action));
      }
    }
  }
  ARROW_RETURN_NOT_OK(updated->AdoptTableState(
      std::move(*table.protocol), std::move(*table.metadata), std::move(table.txns),
      std::move(table.domains), commits.back().version, last_time));
  // The segment keeps the checkpoint and the latest commits only: the state is replayed
  // already, and copying a growing listing would make long-lived updates slower and
  // slower.
  constexpr size_t kUpdateSegmentCommits = 100;
  auto segment = std::make_shared<LogSegment>();
  segment->version = updated->version_;
  segment->checkpoint = segment_->checkpoint;
  segment->stale_checkpoint_hint = segment_->stale_checkpoint_hint;
  segment->stale_hint_version = segment_->stale_hint_version;
  segment->commits = segment_->commits;
  segment->commits.insert(segment->commits.end(), commits.begin(), commits.end());
  if (segment->commits.size() > kUpdateSegmentCommits) {
    segment->commits.erase(
        segment->commits.begin(),
        segment->commits.end() - static_cast<std::ptrdiff_t>(kUpdateSegmentCommits));
  }
  updated->segment_ = std::move(segment);
  return std::shared_ptr<const Snapshot>(std::move(updated));
}

arrow::Result<std::vector<HistoryEntry>> ReadHistory(storage::ObjectStore& store,
                                                     size_t limit) {
  ARROW_ASSIGN_OR_RAISE(auto commits, ListCommits(store));
  if (commits.empty()) {
    // A table whose commits were all cleaned up after a checkpoint has no history to
    // show.
    ARROW_ASSIGN_OR_RAISE(auto entries, store.List(std::string(kLogDir) + "/", ""));
    if (entries.empty()) return NotFoundError("no Delta table at ", store.root_uri());
    return std::vector<HistoryEntry>{};
  }
  std::vector<HistoryEntry> history;
  for (auto it = commits.rbegin(); it != commits.rend(); ++it) {
    if (limit != 0 && history.size() >= limit) break;
    HistoryEntry entry;
    entry.version = it->version;
    entry.timestamp_ms = it->last_modified_ms;
    ARROW_ASSIGN_OR_RAISE(auto actions, ReadCommitActions(store, *it));
    for (auto& action : actions) {
      if (auto* info = std::get_if<CommitInfo>(&action)) {
        if (info->in_commit_timestamp) entry.timestamp_ms = *info->in_commit_timestamp;
        entry.commit_info = std::move(*info);
        break;
      }
    }
    history.push_back(std::move(entry));
  }
  return history;
}

}  // namespace ampdelta::delta
