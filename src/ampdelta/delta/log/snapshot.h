#pragma once

/// \file snapshot.h
/// \brief An immutable view of a table at one version, built by log replay
/// (PROTOCOL.md "Action Reconciliation").

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/log_segment.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Which version to load.
struct SnapshotOptions {
  /// A version (time travel); the latest when unset.
  std::optional<Version> version;
  /// The newest version committed at or before this time (ms since epoch).
  std::optional<int64_t> timestamp_ms;
};

/// \brief An immutable list of shared entries (a snapshot's files or tombstones): a newer
/// snapshot shares the list with the one it was updated from until it changes, and then
/// every unchanged entry, so an update costs what changed, not the size of the table (a
/// stream's 100,000 tombstones are not copied by a commit that adds one file). Iterates
/// as `const T&`.
template <typename T>
class SharedList {
 public:
  using Ptr = std::shared_ptr<const T>;

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;
    const_iterator() = default;
    explicit const_iterator(typename std::vector<Ptr>::const_iterator it) : it_(it) {}
    const T& operator*() const { return **it_; }
    const T* operator->() const { return it_->get(); }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator copy = *this;
      ++it_;
      return copy;
    }
    difference_type operator-(const const_iterator& other) const {
      return it_ - other.it_;
    }
    bool operator==(const const_iterator& other) const = default;

   private:
    typename std::vector<Ptr>::const_iterator it_;
  };

  size_t size() const { return items().size(); }
  bool empty() const { return items().empty(); }
  const T& operator[](size_t i) const { return *items()[i]; }
  const T& front() const { return *items().front(); }
  const T& back() const { return *items().back(); }
  const_iterator begin() const { return const_iterator(items().begin()); }
  const_iterator end() const { return const_iterator(items().end()); }
  bool operator==(const SharedList& other) const {
    return std::equal(begin(), end(), other.begin(), other.end());
  }
  /// \brief Return true when both lists are one and the same list (tests).
  bool SharesListWith(const SharedList& other) const {
    return items_ != nullptr && items_ == other.items_;
  }

 private:
  friend class Snapshot;
  const std::vector<Ptr>& items() const {
    static const std::vector<Ptr> kEmpty;
    return items_ ? *items_ : kEmpty;
  }
  // The list to change: copied first when another snapshot shares it. A snapshot is
  // changed only while it is built, by one thread, so an unshared list is its own.
  std::vector<Ptr>* Mutable() {
    if (!items_) {
      items_ = std::make_shared<std::vector<Ptr>>();
    } else if (items_.use_count() > 1) {
      items_ = std::make_shared<std::vector<Ptr>>(*items_);
    }
    return items_.get();
  }
  std::shared_ptr<std::vector<Ptr>> items_;
};

/// \brief A table version: protocol, metadata, live files, tombstones, app transactions
/// and domain metadata. Immutable and thread-safe.
class Snapshot : public std::enable_shared_from_this<Snapshot> {
 public:
  /// \brief Load a snapshot of the table in `store`.
  ///
  /// Errors: kNotFound (no table), kCorruptLog (gaps, missing protocol/metadata,
  /// unreadable log), kUnsupportedFeature (reader features ampdelta lacks), Invalid (a
  /// version or timestamp outside the table's history).
  static arrow::Result<std::shared_ptr<const Snapshot>> Load(
      std::shared_ptr<storage::ObjectStore> store, const SnapshotOptions& options = {});

  /// \brief Return the snapshot advanced to the latest version, replaying only new
  /// commits (itself when nothing changed).
  arrow::Result<std::shared_ptr<const Snapshot>> Update() const;

  Version version() const { return version_; }
  const Protocol& protocol() const { return protocol_; }
  const Metadata& metadata() const { return metadata_; }
  /// \brief Return the table schema (Delta types as Arrow types).
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  const std::vector<std::string>& partition_columns() const {
    return metadata_.partition_columns;
  }
  /// \brief Return the live data files, ordered by file key (decoded path + DV id).
  const SharedList<Add>& files() const { return files_; }
  /// \brief Return the tombstones still in the log (for VACUUM), ordered like files().
  const SharedList<Remove>& tombstones() const { return tombstones_; }
  /// \brief Return the latest `txn` per app id.
  const std::map<std::string, SetTransaction>& app_transactions() const { return txns_; }
  /// \brief Return the live (not removed) domain metadata per domain.
  const std::map<std::string, DomainMetadata>& domain_metadata() const {
    return domains_;
  }
  /// \brief Return the typed table properties.
  const TableProperties& properties() const { return properties_; }
  /// \brief Return the commit time of this version (in-commit timestamp or file time),
  /// ms.
  int64_t timestamp_ms() const { return timestamp_ms_; }
  /// \brief Return the log segment the snapshot was loaded from; after Update(), its
  /// checkpoint and the most recent commits (kUpdateSegmentCommits) since.
  const LogSegment& log_segment() const { return *segment_; }
  const std::shared_ptr<storage::ObjectStore>& store() const { return store_; }

  /// \brief Return the version committed for `app_id`, if any.
  std::optional<int64_t> AppTransactionVersion(const std::string& app_id) const;
  /// \brief Add up the live files' sizes, one pass over them (INT64_MAX when the log's
  /// sizes add up beyond).
  int64_t SumFileSizes() const;
  /// \brief Count the live rows, one pass over the files, when every file has statistics
  /// (net of deletion vectors) that add up within int64; else nullopt.
  std::optional<int64_t> CountLiveRecords() const;

  /// \brief Return the table-relative key of a file path from the log (percent-decoded,
  /// absolute URIs inside the table made relative).
  std::string FileKey(const std::string& log_path) const;

 private:
  struct ReplayState;

  Snapshot() = default;
  // Take the replayed state as this snapshot's content, after validating it.
  arrow::Status Adopt(ReplayState state, Version version, int64_t last_time);
  // Validate and take protocol, metadata, txns and domains (Adopt's checks).
  arrow::Status AdoptTableState(Protocol protocol, Metadata metadata,
                                std::map<std::string, SetTransaction> txns,
                                std::map<std::string, DomainMetadata> domains,
                                Version version, int64_t last_time);
  // Apply one action of a newer commit to files_ and tombstones_ in place.
  void ApplyFileAction(Action&& action);
  // Insert or replace / remove the entry with replay key `key` in a sorted list.
  template <typename T, typename KeyFn>
  static void Upsert(SharedList<T>* list, const std::string& key, T value,
                     const KeyFn& key_of);
  template <typename T, typename KeyFn>
  static void Erase(SharedList<T>* list, const std::string& key, const KeyFn& key_of);
  static arrow::Result<std::shared_ptr<Snapshot>> Replay(
      std::shared_ptr<storage::ObjectStore> store, LogSegment segment);

  std::shared_ptr<storage::ObjectStore> store_;
  // Shared, so copying a snapshot for Update() does not copy the listing.
  std::shared_ptr<const LogSegment> segment_ = std::make_shared<LogSegment>();
  Version version_ = 0;
  Protocol protocol_;
  Metadata metadata_;
  std::shared_ptr<arrow::Schema> schema_;
  SharedList<Add> files_;
  SharedList<Remove> tombstones_;
  std::map<std::string, SetTransaction> txns_;
  std::map<std::string, DomainMetadata> domains_;
  TableProperties properties_;
  int64_t timestamp_ms_ = 0;
};

/// \brief One entry of a table's history.
struct HistoryEntry {
  Version version = 0;
  int64_t timestamp_ms = 0;
  /// The commit's commitInfo, when it has one.
  std::optional<CommitInfo> commit_info;
};

/// \brief Return the history of a table, newest first, at most `limit` entries (0: all).
arrow::Result<std::vector<HistoryEntry>> ReadHistory(storage::ObjectStore& store,
                                                     size_t limit);

}  // namespace ampdelta::delta
