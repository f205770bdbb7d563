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

TEST_F(CommitterTest, ARefusedCreateOfOurOwnResentWriteIsCommittedNotAConflict) {
  // The store's HTTP retry (or libcurl) re-sent our PUT after the first one landed
  // unseen: the service refuses the second as "exists", and the bytes are ours.
  storage::FaultRule resent;
  resent.op = storage::StoreOp::kPut;
  resent.fail = false;
  resent.before = [this] {
    ASSERT_OK(inner_->Put(CommitPath(2), arrow::Buffer::FromString("ours\n"),
                          storage::PutMode::kCreateIfAbsent));
  };
  store_->AddRule(resent);
  ASSERT_OK_AND_ASSIGN(auto outcome, committer_.TryCommit(2, "ours\n"));
  EXPECT_EQ(outcome, CommitResult::kCommitted);
}

TEST_F(CommitterTest, ARefusedCreateThatCannotBeReadBackIsAnErrorNotAConflict) {
  ASSERT_OK(inner_->Put(CommitPath(5), arrow::Buffer::FromString("ours\n"),
                        storage::PutMode::kCreateIfAbsent));
  storage::FaultRule unreadable;
  unreadable.op = storage::StoreOp::kGet;
  store_->AddRule(unreadable);
  // Calling it a conflict could make the caller commit the same changes twice.
  EXPECT_THAT(committer_.TryCommit(5, "ours\n"),
              testing::StatusHasMessage("could not be read back"));
}

TEST(CreateIfAbsentTest, AWriteLeaseKeyWhoseReplyWasLostIsOurs) {
  auto inner = std::make_shared<storage::MemoryStore>();
  storage::FaultStore store(inner);
  storage::FaultRule lost;
  lost.op = storage::StoreOp::kPut;
  lost.lose_reply = true;
  store.AddRule(lost);
  ASSERT_OK_AND_ASSIGN(auto outcome, CreateIfAbsent(store, "_ampdelta_leases/a", "x"));
  EXPECT_EQ(outcome.state, CreateOutcome::State::kCreated);
  ASSERT_OK_AND_ASSIGN(auto again, CreateIfAbsent(store, "_ampdelta_leases/a", "y"));
  EXPECT_EQ(again.state, CreateOutcome::State::kTaken);
}

}  // namespace
}  // namespace ampdelta::delta
