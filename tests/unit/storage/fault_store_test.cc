#include "ampdelta/storage/fault_store.h"

#include <arrow/buffer.h>

#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::storage {
namespace {

class FaultStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<MemoryStore> inner_ = std::make_shared<MemoryStore>();
  FaultStore store_{inner_};
};

TEST_F(FaultStoreTest, FailsTheNthMatchingCallOnly) {
  store_.AddRule({StoreOp::kPut, "_delta_log/", 2, false, "boom", {}, true, false});
  EXPECT_OK(store_.Put("data/a", arrow::Buffer::FromString("a"), PutMode::kOverwrite));
  EXPECT_OK(store_.Put("_delta_log/0.json", arrow::Buffer::FromString("a"),
                       PutMode::kOverwrite));
  EXPECT_THAT(store_.Put("_delta_log/1.json", arrow::Buffer::FromString("b"),
                         PutMode::kOverwrite),
              testing::StatusHasMessage("boom"));
  EXPECT_THAT(inner_->Head("_delta_log/1.json"),
              testing::HasErrorCode(ErrorCode::kNotFound));
  EXPECT_OK(store_.Put("_delta_log/2.json", arrow::Buffer::FromString("c"),
                       PutMode::kOverwrite));
  EXPECT_EQ(store_.calls(StoreOp::kPut), 4);
  EXPECT_EQ(store_.faults_fired(), 1);
}

TEST_F(FaultStoreTest, LostReplyPerformsTheWriteButReportsFailure) {
  store_.AddRule({StoreOp::kPut, "", 1, true, "connection reset", {}, true, false});
  EXPECT_THAT(store_.Put("k", arrow::Buffer::FromString("v"), PutMode::kCreateIfAbsent),
              testing::StatusHasMessage("connection reset"));
  ASSERT_OK_AND_ASSIGN(auto data, inner_->Get("k"));
  EXPECT_EQ(data->ToString(), "v");
}

TEST_F(FaultStoreTest, EveryCallRuleAndClear) {
  store_.AddRule({StoreOp::kList, "", 0, false, "down", {}, true, false});
  EXPECT_FALSE(store_.List("", "").ok());
  EXPECT_FALSE(store_.List("", "").ok());
  store_.ClearRules();
  EXPECT_OK(store_.List("", "").status());
}

}  // namespace
}  // namespace ampdelta::storage
