// The deltalake loader against the in-process dev server, writing local tables.

#include <atomic>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/client/client.h"
#include "ampdelta/storage/object_store_registry.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

constexpr const char* kQuickstart =
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)";

class BatchLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, devserver::DevServer::Start({}));
    client_ = std::make_unique<Client>(server_->url());
    table_ = dir_.path() + "/blocks";
    ASSERT_OK(client_->ConfigureConnection("local_delta", "deltalake",
                                           {{"table_path", table_}}));
  }

  loader::LoadResult Load(const std::string& sql,
                          loader::LoadMode mode = loader::LoadMode::kAppend) {
    loader::LoadOptions options;
    options.connection = "local_delta";
    options.destination = "blocks";
    options.mode = mode;
    return client_->Sql(sql).Load(options);
  }

  std::shared_ptr<const delta::Snapshot> Snapshot() {
    return *delta::Snapshot::Load(*storage::OpenObjectStore(table_));
  }

  ampdelta::testing::TempDir dir_;
  std::unique_ptr<devserver::DevServer> server_;
  std::unique_ptr<Client> client_;
  std::string table_;
};

TEST_F(BatchLoadTest, QuickstartLoadsOneCommitWithTheSeedsTypes) {
  const loader::LoadResult result = Load(kQuickstart);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 100);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("table_version")), "0");
  auto snapshot = Snapshot();
  EXPECT_EQ(snapshot->CountLiveRecords(), std::optional<int64_t>(100));
  EXPECT_EQ(snapshot->schema()->field(0)->type()->ToString(), "int64");
  EXPECT_EQ(snapshot->schema()->field(1)->type()->ToString(), "timestamp[us, tz=UTC]");
  EXPECT_EQ(snapshot->schema()->field(2)->type()->ToString(), "binary");
}

TEST_F(BatchLoadTest, OverwriteKeepsEveryRowOfTheLoad) {
  ASSERT_TRUE(Load(kQuickstart).success);
  // A load of many batches: the Python loader would keep only the last one.
  const auto result =
      Load(R"(SELECT * FROM "acme/eth_mainnet".transactions WHERE block_num < 24000050)",
           loader::LoadMode::kOverwrite);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 400);
  EXPECT_EQ(Snapshot()->CountLiveRecords(), std::optional<int64_t>(400));
}

TEST_F(BatchLoadTest, ServerErrorsFailTheLoadAndLeaveTheTable) {
  ASSERT_TRUE(Load(kQuickstart).success);
  const auto result = Load(R"(SELECT nope FROM "acme/eth_mainnet".blocks)");
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("INVALID_ARGUMENT: invalid query: column 'nope' not found"),
            std::string::npos)
      << result.error;
  EXPECT_EQ(Snapshot()->version(), 0);
  EXPECT_NE(result.ToString().find("❌ Failed to load to blocks"), std::string::npos);
}

TEST_F(BatchLoadTest, ServerDyingMidLoadCommitsNothing) {
  devserver::DevServerOptions options;
  options.chain.initial_blocks = 20000;
  options.chain.transactions_per_block = 50;
  ASSERT_OK_AND_ASSIGN(auto big, devserver::DevServer::Start(options));
  Client client(big->url());
  // The retries (the server stays down) end quickly and commit nothing either.
  ASSERT_OK(client.ConfigureConnection(
      "t", "deltalake",
      R"({"table_path": ")" + table_ +
          R"(", "resilience": {"retry": {"max_retries": 2, "initial_backoff_ms": 10}}})"));
  loader::LoadOptions load;
  load.connection = "t";
  load.destination = "tx";
  int64_t seen = 0;
  load.on_batch = [&](const loader::LoadResult& batch) {
    seen = std::stoll(loader::MetadataText(batch.metadata.at("total_rows")));
    if (seen > 100'000) (void)big->Shutdown();
  };
  const auto result =
      client.Sql(R"(SELECT * FROM "acme/eth_mainnet".transactions)").Load(load);
  EXPECT_FALSE(result.success);
  EXPECT_GT(seen, 100'000);
  EXPECT_THAT(
      storage::OpenObjectStore(table_).ValueOrDie()->List("", ""),
      ::testing::ResultOf([](const auto& listing) { return listing->size(); }, 0u));
}

// The Python package stops a load from the last batch's progress report when a callback
// raises: that load must not commit.
TEST_F(BatchLoadTest, StopAskedForWhileTheLastBatchIsReportedCommitsNothing) {
  ASSERT_TRUE(Load(kQuickstart).success);
  std::atomic<bool> stop{false};
  loader::LoadOptions load;
  load.connection = "local_delta";
  load.destination = "blocks";
  load.stop = &stop;
  int64_t batches = 0;
  load.on_batch = [&](const loader::LoadResult& batch) {
    ++batches;
    if (batch.progress.total_rows == 100) stop.store(true);
  };
  const auto result = client_->Sql(kQuickstart).Load(load);
  EXPECT_FALSE(result.success);
  EXPECT_GT(batches, 0);
  EXPECT_NE(result.error.find("nothing committed"), std::string::npos) << result.error;
  EXPECT_EQ(Snapshot()->version(), 0);
}

TEST_F(BatchLoadTest, UnknownConnectionOrBadConfigIsAClearError) {
  EXPECT_THAT(client_->ConfigureConnection("x", "deltalake",
                                           {{"table_path", "t"}, {"batch_size", "10"}}),
              testing::StatusHasMessage("unknown key 'batch_size'"));
  EXPECT_THAT(client_->ConfigureConnection("x", "postgres", {{"table_path", "t"}}),
              testing::StatusHasMessage("unknown loader 'postgres'"));
  loader::LoadOptions options;
  options.connection = "missing";
  EXPECT_NE(client_->Sql(kQuickstart).Load(options).error.find("unknown connection"),
            std::string::npos);
}

}  // namespace
}  // namespace ampdelta
