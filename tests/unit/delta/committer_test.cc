#include "ampdelta/delta/txn/committer.h"

#include <arrow/buffer.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

class CommitterTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::MemoryStore> inner_ = std::make_shared<storage::MemoryStore>();
  std::shared_ptr<storage::FaultStore> store_ =
      std::make_shared<storage::FaultStore>(inner_);
  Committer committer_{store_};
};

TEST_F(CommitterTest, AFreeVersionIsCommittedAndATakenOneConflicts) {
  ASSERT_OK_AND_ASSIGN(auto first, committer_.TryCommit(0, "ours\n"));
  EXPECT_EQ(first, CommitResult::kCommitted);
  ASSERT_OK_AND_ASSIGN(auto second, committer_.TryCommit(0, "theirs\n"));
  EXPECT_EQ(second, CommitResult::kConflicted);
  ASSERT_OK_AND_ASSIGN(auto stored, inner_->Get(CommitPath(0)));
  EXPECT_EQ(stored->ToString(), "ours\n");
}

TEST_F(CommitterTest, AWriteWhoseReplyWasLostIsResolvedByReadingTheVersionBack) {
  storage::FaultRule lost;
  lost.op = storage::StoreOp::kPut;
  lost.lose_reply = true;
  store_->AddRule(lost);
  ASSERT_OK_AND_ASSIGN(auto outcome, committer_.TryCommit(3, "ours\n"));
  EXPECT_EQ(outcome, CommitResult::kCommitted);
  // Lost, and another writer's bytes are there: the version is taken.
  store_->ClearRules();
  ASSERT_OK(inner_->Put(CommitPath(4), arrow::Buffer::FromString("theirs\n"),
                        storage::PutMode::kCreateIfAbsent));
  lost.nth = 0;
  store_->AddRule(lost);
  ASSERT_OK_AND_ASSIGN(auto taken, committer_.TryCommit(4, "ours\n"));
  EXPECT_EQ(taken, CommitResult::kConflicted);
}

TEST_F(CommitterTest,
       ATransientFailureLeavingTheVersionFreeIsRetryableAPermanentOneAnError) {
  storage::FaultRule transient;
  transient.op = storage::StoreOp::kPut;
  store_->AddRule(transient);
  ASSERT_OK_AND_ASSIGN(auto outcome, committer_.TryCommit(0, "ours\n"));
  EXPECT_EQ(outcome, CommitResult::kRetryable);
  EXPECT_THAT(committer_.last_failure(), testing::StatusHasMessage("injected fault"));
  store_->ClearRules();
  storage::FaultRule full;
  full.op = storage::StoreOp::kPut;
  full.subcode = "ENOSPC";
  store_->AddRule(full);
  EXPECT_THAT(committer_.TryCommit(0, "ours\n"),
              testing::StatusHasMessage("commit of version 0 failed"));
  EXPECT_FALSE(inner_->Head(CommitPath(0)).ok());
}

}  // namespace
}  // namespace ampdelta::delta
