#pragma once

/// \file committer.h
/// \brief Publishing a commit: `<version>.json` written with put-if-absent, and a write
/// whose reply was lost resolved by reading the version back. The outcome names what the
/// caller does next, as delta-kernel-rs's CommitResult does.

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief What became of one attempt to publish a version.
enum class CommitResult : uint8_t {
  /// The version holds these bytes: the commit happened.
  kCommitted,
  /// Another writer holds the version: check its commit and try the next one.
  kConflicted,
  /// The write failed transiently and the version is still free: try the same version
  /// again after a back-off.
  kRetryable,
};

/// \brief What a create-if-absent whose reply may be lost found.
struct CreateOutcome {
  enum class State : uint8_t {
    /// The object holds our bytes: this call (or an attempt of it the store re-sent)
    /// created it.
    kCreated,
    /// The object holds other bytes: another writer created it.
    kTaken,
    /// The write failed transiently and the object does not exist.
    kFree,
  };
  State state;
  /// The store's reply to the write (OK when kCreated without a read-back).
  arrow::Status failure;
};

/// \brief Create `path` holding `bytes` unless it exists, and settle an ambiguous reply
/// by reading the object back: a refused create may be our own earlier attempt that
/// the store re-sent, a failed one may have landed. This is the one place that decides
/// it; stores only report what the service said.
///
/// \return the outcome; the store's error when the write failed permanently (or
///   transiently and the object could not be read back) and the object is not ours
arrow::Result<CreateOutcome> CreateIfAbsent(storage::ObjectStore& store,
                                            const std::string& path,
                                            const std::string& bytes);

/// \brief Writes commit files of one table. Thread-compatible.
class Committer {
 public:
  explicit Committer(std::shared_ptr<storage::ObjectStore> store)
      : store_(std::move(store)) {}

  /// \brief Try to publish `bytes` as `version`.
  ///
  /// \return the outcome; a storage error when the write failed permanently (or
  ///   transiently and the version could not be read back), with the version named
  arrow::Result<CommitResult> TryCommit(Version version, const std::string& bytes);

  /// \brief Return the failure behind the last kRetryable outcome.
  const arrow::Status& last_failure() const { return last_failure_; }

 private:
  std::shared_ptr<storage::ObjectStore> store_;
  arrow::Status last_failure_;
};

}  // namespace ampdelta::delta
