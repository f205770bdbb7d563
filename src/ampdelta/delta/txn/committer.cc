#include "ampdelta/delta/txn/committer.h"

#include <arrow/buffer.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

arrow::Result<CreateOutcome> CreateIfAbsent(storage::ObjectStore& store,
                                            const std::string& path,
                                            const std::string& bytes) {
  const arrow::Status put = store.Put(path, arrow::Buffer::FromString(bytes),
                                      storage::PutMode::kCreateIfAbsent);
  if (put.ok()) return CreateOutcome{CreateOutcome::State::kCreated, put};
  // Either the reply was lost after the write landed, or the object exists because an
  // earlier attempt of this same call landed and the store (its HTTP retry, or libcurl
  // re-sending on a closed connection) sent it again: the bytes tell whose it is.
  const bool refused = IsError(put, ErrorCode::kPreconditionFailed);
  auto existing = store.Get(path);
  if (existing.ok()) {
    return CreateOutcome{(*existing)->ToString() == bytes ? CreateOutcome::State::kCreated
                                                          : CreateOutcome::State::kTaken,
                         put};
  }
  const bool missing = IsError(existing.status(), ErrorCode::kNotFound);
  // Refused, then gone: someone held it (a table being replaced); the caller looks again.
  if (refused && missing) return CreateOutcome{CreateOutcome::State::kTaken, put};
  if (!refused && missing && IsTransientError(put)) {
    return CreateOutcome{CreateOutcome::State::kFree, put};
  }
  if (refused) {
    return existing.status().WithMessage(
        path, " exists and could not be read back to tell whether this write made it: ",
        existing.status().message());
  }
  return put;
}

arrow::Result<CommitResult> Committer::TryCommit(Version version,
                                                 const std::string& bytes) {
  auto outcome = CreateIfAbsent(*store_, CommitPath(version), bytes);
  if (!outcome.ok()) {
    const arrow::Status& failed = outcome.status();
    return failed.WithMessage("commit of version ", version,
                              " failed: ", failed.message());
  }
  switch (outcome->state) {
    case CreateOutcome::State::kCreated:
      return CommitResult::kCommitted;
    case CreateOutcome::State::kTaken:
      return CommitResult::kConflicted;
    case CreateOutcome::State::kFree:
      break;
  }
  last_failure_ = outcome->failure;
  return CommitResult::kRetryable;
}

}  // namespace ampdelta::delta
