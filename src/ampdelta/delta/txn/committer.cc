#include "ampdelta/delta/txn/committer.h"

#include <arrow/buffer.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

arrow::Result<CommitResult> Committer::TryCommit(Version version,
                                                 const std::string& bytes) {
  const std::string path = CommitPath(version);
  const arrow::Status put = store_->Put(path, arrow::Buffer::FromString(bytes),
                                        storage::PutMode::kCreateIfAbsent);
  if (put.ok()) return CommitResult::kCommitted;
  if (IsError(put, ErrorCode::kPreconditionFailed)) return CommitResult::kConflicted;
  // The reply may have been lost after the write landed: read the version back.
  auto existing = store_->Get(path);
  if (existing.ok()) {
    return (*existing)->ToString() == bytes ? CommitResult::kCommitted
                                            : CommitResult::kConflicted;
  }
  if (IsError(existing.status(), ErrorCode::kNotFound) && IsTransientError(put)) {
    last_failure_ = put;
    return CommitResult::kRetryable;
  }
  return put.WithMessage("commit of version ", version, " failed: ", put.message());
}

}  // namespace ampdelta::delta
