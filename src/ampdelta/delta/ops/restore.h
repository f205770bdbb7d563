#pragma once

/// \file restore.h
/// \brief RESTORE: make the latest version equal an earlier one.

#include <memory>

#include <arrow/result.h>

#include "ampdelta/delta/txn/transaction.h"

namespace ampdelta::delta {

/// \brief Make the latest version's content equal `version`'s, in one commit (earlier and
/// later versions stay readable). Fails when files of that version were vacuumed.
arrow::Result<CommitReport> Restore(std::shared_ptr<storage::ObjectStore> store,
                                    Version version, const CommitOptions& commit = {});

}  // namespace ampdelta::delta
