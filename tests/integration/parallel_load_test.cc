// Parallel backfills against the in-process dev server: many workers on a new table,
// re-runs that overlap, concurrent runs cutting the range differently, a partition that
// fails and then loads, shards, refusals, and the hand-off to a stream with a reorg at
// the head. After each the table must hold every block's rows exactly once.

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <arrow/array.h>
#include <arrow/table.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/devserver/synthetic_chain.h"
#include "ampdelta/loader/backfill/parallel_loader.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/state/backfill_state.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/status.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

constexpr uint64_t kFirst = 24'000'000;
constexpr const char* kTransactions =
    R"(SELECT block_num, tx_index, block_hash FROM "acme/eth_mainnet".transactions)";
constexpr uint32_t kTxsPerBlock = 3;

// Fails the queries whose SQL contains `needle`, `failures` times, with INTERNAL at
// planning (a failure the batch loader does not retry itself).
class FailingPartitionClient : public amp::Client {
 public:
  FailingPartitionClient(amp::Client* inner, std::string needle, int failures)
      : inner_(inner), needle_(std::move(needle)), failures_(failures) {}

  arrow::Result<std::unique_ptr<amp::QueryStream>> Query(
      const std::string& sql, const amp::QueryOptions& options) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (sql.find(needle_) != std::string::npos && failures_ > 0) {
        --failures_;
        ++injected;
        return WithErrorCode(
            arrow::Status::IOError("GetFlightInfo failed: INTERNAL: injected"),
            ErrorCode::kServerError, "INTERNAL");
      }
    }
    return inner_->Query(sql, options);
  }
  arrow::Result<std::shared_ptr<arrow::Schema>> GetSchema(
      const std::string& sql, const amp::QueryOptions& options) override {
    return inner_->GetSchema(sql, options);
  }
  const std::string& url() const override { return inner_->url(); }

  int injected = 0;

 private:
  amp::Client* inner_;
  std::string needle_;
  std::mutex mutex_;
  int failures_;
};

class ParallelLoadTest : public ::testing::Test {
 protected:
  void Start(uint64_t blocks, devserver::LiveOptions live = {}) {
    devserver::DevServerOptions options;
    options.chain.initial_blocks = blocks;
    options.chain.transactions_per_block = kTxsPerBlock;
    options.live = live;
    ASSERT_OK_AND_ASSIGN(server_, devserver::DevServer::Start(std::move(options)));
    ASSERT_OK_AND_ASSIGN(amp_, amp::Client::Connect(server_->url()));
    table_ = dir_.path() + "/transactions";
  }

  loader::DeltaLakeConfig Config(bool optimize = false,
                                 const std::string& properties = "{}") {
    auto config = loader::ParseDeltaLakeConfig(
        R"({"table_path": ")" + table_ + R"(", "optimize_after_write": )" +
        (optimize ? "true" : "false") + R"(, "table_properties": )" + properties +
        R"(, "resilience": {"retry": {"initial_backoff_ms": 1}}})");
    EXPECT_OK(config.status());
    return *config;
  }

  loader::LoadOptions Options() {
    loader::LoadOptions options;
    options.destination = "transactions";
    options.sleep = [](std::chrono::milliseconds) {};
    return options;
  }

  // Partitions load blocks at least 10 below the head; a stream loads the rest.
  static loader::ParallelOptions Parallel() {
    loader::ParallelOptions options;
    options.reorg_buffer = 10;
    return options;
  }

  loader::LoadResult Load(const loader::ParallelOptions& parallel,
                          amp::Client* client = nullptr, bool optimize = false) {
    return loader::LoadParallel(client ? *client : *amp_, kTransactions, Config(optimize),
                                Options(), parallel);
  }

  std::shared_ptr<const delta::Snapshot> Snapshot() {
    return *delta::Snapshot::Load(*storage::OpenObjectStore(table_));
  }

  // Load options writing through a store that runs `actor` (another writer) just before
  // the commit of table version `version` is written: a race the load must lose.
  loader::LoadOptions RacedAtCommit(int64_t version, std::function<void()> actor) {
    auto faults = std::make_shared<storage::FaultStore>(
        storage::OpenObjectStore(table_).ValueOrDie());
    storage::FaultRule race;
    race.op = storage::StoreOp::kPut;
    race.path_contains = delta::CommitPath(version);
    race.fail = false;
    race.before = std::move(actor);
    faults->AddRule(race);
    loader::LoadOptions options = Options();
    options.store = faults;
    return options;
  }

  // Rows per block (block_num -> count) and the block hashes the rows carry.
  std::map<int64_t, int64_t> RowsPerBlock(
      std::map<int64_t, std::string>* hashes = nullptr) {
    auto scan =
        delta::TableScan::Make(Snapshot(), {{"block_num", "block_hash"}, std::nullopt});
    EXPECT_OK(scan.status());
    auto table = *(*scan)->ToTable();
    std::map<int64_t, int64_t> counts;
    if (table->num_rows() == 0) return counts;
    auto batch = *table->CombineChunksToBatch();
    const auto& numbers = static_cast<const arrow::Int64Array&>(*batch->column(0));
    const auto& block_hashes = static_cast<const arrow::BinaryArray&>(*batch->column(1));
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      ++counts[numbers.Value(i)];
      if (hashes) (*hashes)[numbers.Value(i)] = ToHex0x(block_hashes.GetView(i));
    }
    return counts;
  }

  // Every block of [first, last] has its transactions exactly once, and no other block.
  void ExpectExactlyOnce(uint64_t first, uint64_t last) {
    const auto counts = RowsPerBlock();
    ASSERT_EQ(counts.size(), last - first + 1);
    EXPECT_EQ(counts.begin()->first, static_cast<int64_t>(first));
    EXPECT_EQ(counts.rbegin()->first, static_cast<int64_t>(last));
    for (const auto& [block, rows] : counts) {
      ASSERT_EQ(rows, kTxsPerBlock) << "block " << block;
    }
  }

  // Blocks kFirst.. kFirst + blocks - 1 exactly once, every row on the canonical chain.
  void ExpectCanonical(uint64_t blocks) {
    std::map<int64_t, std::string> hashes;
    const auto counts = RowsPerBlock(&hashes);
    ASSERT_EQ(counts.size(), blocks);
    EXPECT_EQ(counts.begin()->first, static_cast<int64_t>(kFirst));
    for (const auto& [block, rows] : counts) ASSERT_EQ(rows, kTxsPerBlock) << block;
    for (const auto& [block, hash] : hashes) {
      ASSERT_EQ(hash, server_->chain()->BlockHash(static_cast<uint64_t>(block))) << block;
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<devserver::DevServer> server_;
  std::unique_ptr<amp::Client> amp_;
  std::string table_;
};

TEST_F(ParallelLoadTest, EightWorkersCreateANewTableOnceAndLoadEveryBlockOnce) {
  Start(400);
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 8;
  parallel.partition_size = 25;
  const auto result = Load(parallel);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 400 * kTxsPerBlock);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("partitions_loaded")), "16");
  ExpectExactlyOnce(kFirst, kFirst + 399);
  // Partitions recorded every final block (the losers of the race to create the table
  // appended); the stream took over after them.
  const auto snapshot = Snapshot();
  const std::string app_id = loader::StreamAppId(kTransactions);
  const auto read = loader::ReadBackfillState(*snapshot, app_id, "block_num");
  ASSERT_OK(read.status());
  const loader::BackfillState& state = *read;
  ASSERT_EQ(state.loaded.at("mainnet").size(), 1u);
  EXPECT_EQ(state.loaded.at("mainnet")[0], (loader::BlockSpan{kFirst, kFirst + 389}));
  EXPECT_EQ(loader::TakeoverBlocks(*snapshot, app_id).at("mainnet"), kFirst + 390);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("handoff_block")),
            std::to_string(kFirst + 390));
}

TEST_F(ParallelLoadTest, ARerunLoadsNothingAndOverlappingRerunsOnlyTheMissingBlocks) {
  Start(300);
  loader::ParallelOptions first = Parallel();
  first.num_workers = 2;
  first.partition_size = 40;
  first.min_block = kFirst + 50;
  first.max_block = kFirst + 149;
  ASSERT_TRUE(Load(first).success);
  const auto again = Load(first);
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(again.rows_loaded, 0);
  EXPECT_EQ(loader::MetadataText(again.metadata.at("partitions")), "0");
  // A wider run cut differently: only the blocks around the first range load.
  loader::ParallelOptions wider = Parallel();
  wider.num_workers = 4;
  wider.partition_size = 33;
  const auto result = Load(wider);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, (300 - 100) * kTxsPerBlock);
  ExpectExactlyOnce(kFirst, kFirst + 299);
}

TEST_F(ParallelLoadTest, ConcurrentRunsCuttingTheRangeDifferentlyLoadEachBlockOnce) {
  Start(300);
  loader::ParallelOptions a = Parallel();
  a.num_workers = 3;
  a.partition_size = 17;
  loader::ParallelOptions b = Parallel();
  b.num_workers = 3;
  b.partition_size = 29;
  b.min_block = kFirst + 13;
  // Backfills of final blocks only: the tail would be streamed by both, and one stream of
  // a query runs at a time.
  a.max_block = b.max_block = kFirst + 289;
  loader::LoadResult first;
  loader::LoadResult second;
  std::thread other([&] { second = Load(b); });
  first = Load(a);
  other.join();
  ASSERT_TRUE(first.success) << first.error;
  ASSERT_TRUE(second.success) << second.error;
  EXPECT_EQ(first.rows_loaded + second.rows_loaded, 290 * kTxsPerBlock);
  ExpectExactlyOnce(kFirst, kFirst + 289);
}

TEST_F(ParallelLoadTest, APartitionFailingTwiceIsRetriedAndLoads) {
  Start(200);
  // The partition of blocks 24000100-24000149 fails at planning twice.
  FailingPartitionClient client(amp_.get(), ">= 24000100 AND", 2);
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 2;
  parallel.partition_size = 50;
  const auto result = Load(parallel, &client);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(client.injected, 2);
  ExpectExactlyOnce(kFirst, kFirst + 199);
}

TEST_F(ParallelLoadTest,
       APartitionThatKeepsFailingIsReportedWithItsRangeAndARerunLoadsIt) {
  Start(200);
  FailingPartitionClient client(amp_.get(), ">= 24000100 AND", 3);
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 2;
  parallel.partition_size = 50;
  const auto failed = Load(parallel, &client);
  ASSERT_FALSE(failed.success);
  EXPECT_THAT(failed.error, ::testing::HasSubstr("blocks 24000100-24000149"));
  EXPECT_THAT(failed.error, ::testing::HasSubstr("run the same command again"));
  EXPECT_EQ(loader::MetadataText(failed.metadata.at("missing_ranges")),
            "24000100-24000149");
  // The final blocks 0-189 but that partition; the stream waits for the backfill.
  EXPECT_EQ(failed.rows_loaded, 140 * kTxsPerBlock);
  const auto counts = RowsPerBlock();
  EXPECT_EQ(counts.size(), 140u);
  EXPECT_EQ(counts.count(static_cast<int64_t>(kFirst + 120)), 0u);
  // A stream would skip the missing blocks: it refuses, naming them.
  loader::LoadOptions stream = Options();
  stream.until_block = kFirst + 199;
  const auto refused = loader::LoadStream(*amp_, kTransactions, Config(), stream);
  ASSERT_FALSE(refused.success);
  EXPECT_THAT(refused.error,
              ::testing::HasSubstr("incomplete (blocks mainnet 24000100-24000149"));
  // The re-run loads only the missing partition.
  const auto rerun = Load(parallel);
  ASSERT_TRUE(rerun.success) << rerun.error;
  EXPECT_EQ(rerun.rows_loaded, (50 + 10) * kTxsPerBlock);  // and the streamed tail
  ExpectExactlyOnce(kFirst, kFirst + 199);
  // Now the stream continues after the backfill.
  const auto streamed = loader::LoadStream(*amp_, kTransactions, Config(), stream);
  ASSERT_TRUE(streamed.success) << streamed.error;
  ExpectExactlyOnce(kFirst, kFirst + 199);
}

TEST_F(ParallelLoadTest, StopOnErrorStartsNoPartitionAfterAFailure) {
  Start(200);
  FailingPartitionClient client(amp_.get(), ">= 24000000 AND", 10);
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 1;
  parallel.partition_size = 20;
  parallel.partition_attempts = 1;
  parallel.stop_on_error = true;
  const auto result = Load(parallel, &client);
  ASSERT_FALSE(result.success);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("partitions_loaded")), "0");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("missing_ranges")),
            "24000000-24000189");
}

TEST_F(ParallelLoadTest, ShardsTogetherLoadEveryBlockOnce) {
  Start(250);
  std::vector<std::thread> shards;
  std::vector<loader::LoadResult> results(3);
  for (int i = 0; i < 3; ++i) {
    shards.emplace_back([&, i] {
      loader::ParallelOptions parallel = Parallel();
      parallel.num_workers = 2;
      parallel.max_block = kFirst + 239;
      parallel.shard_index = i;
      parallel.shard_count = 3;
      results[static_cast<size_t>(i)] = Load(parallel);
    });
  }
  for (auto& shard : shards) shard.join();
  for (const auto& result : results) ASSERT_TRUE(result.success) << result.error;
  ExpectExactlyOnce(kFirst, kFirst + 239);
}

TEST_F(ParallelLoadTest, RowsAnotherWriterLoadedInTheRangeAreRefusedAndTheTableIsKept) {
  Start(100);
  loader::LoadOptions options = Options();
  const std::string some = std::string(kTransactions) +
                           " WHERE block_num >= 24000040 AND block_num <= 24000044";
  ASSERT_TRUE(loader::LoadBatch(*amp_, some, Config(), options).success);
  const auto before = Snapshot()->version();
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 2;
  const auto refused = Load(parallel);
  ASSERT_FALSE(refused.success);
  EXPECT_THAT(refused.error,
              ::testing::HasSubstr("block_num 24000040 to 24000044, and blocks"));
  EXPECT_EQ(Snapshot()->version(), before);
  // Outside them the backfill loads.
  parallel.min_block = kFirst + 45;
  ASSERT_TRUE(Load(parallel).success);
  const auto counts = RowsPerBlock();
  EXPECT_EQ(counts.size(), 5u + 55u);
}

TEST_F(ParallelLoadTest, BadRangesAndQueriesAreRefusedBeforeAnythingIsWritten) {
  Start(100);
  loader::ParallelOptions parallel = Parallel();
  parallel.max_block = kFirst + 100;  // past the head
  EXPECT_THAT(Load(parallel).error, ::testing::HasSubstr("past the server's head"));
  parallel.max_block = kFirst + 95;  // the reorg window is 90..99
  EXPECT_THAT(Load(parallel).error, ::testing::HasSubstr("within the reorg window"));
  parallel.max_block = kFirst + 10;
  parallel.min_block = kFirst + 20;
  EXPECT_THAT(Load(parallel).error, ::testing::HasSubstr("is above max_block"));
  loader::ParallelOptions shard = Parallel();
  shard.shard_index = 1;
  shard.shard_count = 2;
  EXPECT_THAT(Load(shard).error, ::testing::HasSubstr("shards need max_block"));
  const auto limited = loader::LoadParallel(
      *amp_, std::string(kTransactions) + " LIMIT 3", Config(), Options(), Parallel());
  EXPECT_THAT(limited.error, ::testing::HasSubstr("LIMIT"));
  const auto no_column = loader::LoadParallel(
      *amp_, R"(SELECT tx_index FROM "acme/eth_mainnet".transactions)", Config(),
      Options(), Parallel());
  // The server's "not found in subquery" used to be all it said.
  EXPECT_THAT(no_column.error,
              ::testing::HasSubstr("filters the query's blocks on --block-column "
                                   "'block_num', which its result does not have (it "
                                   "returns tx_index)"));
  EXPECT_TRUE(IsError(no_column.status, ErrorCode::kInvalidInput));
  const auto renamed = loader::LoadParallel(
      *amp_, R"(SELECT block_num AS bn, tx_index FROM "acme/eth_mainnet".transactions)",
      Config(), Options(), Parallel());
  EXPECT_THAT(renamed.error, ::testing::HasSubstr("(it returns bn, tx_index)"));
  EXPECT_FALSE(storage::OpenObjectStore(table_)
                   .ValueOrDie()
                   ->Head("_delta_log/00000000000000000000.json")
                   .ok());
}

// Partitions load final blocks only; the stream loads the reorg window with each range's
// hash, so a reorg of the head after the load and a later stream meet in the stream's
// own machinery.
TEST_F(ParallelLoadTest, AReorgOfTheHeadAfterABackfillIsUndoneByTheStreamThatFollows) {
  Start(300);
  loader::ParallelOptions parallel = Parallel();
  parallel.reorg_buffer = 20;
  parallel.num_workers = 4;
  parallel.partition_size = 40;
  const auto loaded = Load(parallel);
  ASSERT_TRUE(loaded.success) << loaded.error;
  EXPECT_EQ(loader::MetadataText(loaded.metadata.at("max_block")),
            std::to_string(kFirst + 279));
  EXPECT_EQ(loader::MetadataText(loaded.metadata.at("handoff_block")),
            std::to_string(kFirst + 280));
  ExpectExactlyOnce(kFirst, kFirst + 299);
  ASSERT_OK(server_->chain()->Reorg(3));
  ASSERT_OK(server_->AdvanceHead(100));
  loader::LoadOptions options = Options();
  options.until_block = kFirst + 399;
  options.stream_commit_interval = std::chrono::milliseconds(10);
  const auto streamed = loader::LoadStream(*amp_, kTransactions, Config(), options);
  ASSERT_TRUE(streamed.success) << streamed.error;
  ExpectCanonical(400);
}

// A re-run of a backfill over a table whose tail a stream loaded: the stream's blocks
// stay its own, and a chain that reorged them meanwhile is put right by the stream.
TEST_F(ParallelLoadTest, ARerunAfterTheHeadReorgedLeavesTheTailToTheStream) {
  Start(300);
  ASSERT_TRUE(Load(Parallel()).success);
  ASSERT_OK(server_->chain()->Reorg(6));
  ASSERT_OK(server_->AdvanceHead(50));
  const auto again = Load(Parallel());
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(loader::MetadataText(again.metadata.at("partitions")), "0");
  ExpectCanonical(350);
}

TEST_F(ParallelLoadTest, ThenStreamRunAgainAfterItsStreamStartedResumesTheStream) {
  Start(300);
  loader::ParallelOptions parallel = Parallel();
  parallel.then_stream = true;
  loader::LoadOptions options = Options();
  options.until_block = kFirst + 299;
  ASSERT_TRUE(
      loader::LoadParallel(*amp_, kTransactions, Config(), options, parallel).success);
  ASSERT_OK(server_->AdvanceHead(30));
  options.until_block = kFirst + 329;
  const auto again =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, parallel);
  ASSERT_TRUE(again.success) << again.error;
  ExpectCanonical(330);
}

TEST_F(ParallelLoadTest, ABackfillAfterTheStreamLoadedTheBlocksLoadsNothing) {
  Start(200);
  loader::LoadOptions options = Options();
  options.until_block = kFirst + 199;
  ASSERT_TRUE(loader::LoadStream(*amp_, kTransactions, Config(), options).success);
  const auto backfill = Load(Parallel());
  ASSERT_TRUE(backfill.success) << backfill.error;
  EXPECT_EQ(loader::MetadataText(backfill.metadata.at("partitions")), "0");
  ExpectCanonical(200);
}

TEST_F(ParallelLoadTest, AStreamAndABackfillStartedTogetherLoadEachBlockOnce) {
  Start(400);
  loader::LoadOptions options = Options();
  options.until_block = kFirst + 399;
  loader::LoadResult streamed;
  std::thread stream(
      [&] { streamed = loader::LoadStream(*amp_, kTransactions, Config(), options); });
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 3;
  parallel.partition_size = 15;
  const auto backfill = Load(parallel);
  stream.join();
  // Whichever started first owns what it loaded; the other refused or loaded the rest.
  EXPECT_TRUE(backfill.success || streamed.success)
      << backfill.error << " / " << streamed.error;
  if (!streamed.success) {
    EXPECT_THAT(streamed.error, ::testing::HasSubstr("incomplete")) << streamed.error;
  }
  ExpectCanonical(400);
}

// An overwrite replaces the stream's blocks with rows it did not load: the stream (and a
// backfill re-run handing over to it) must refuse, not append those blocks again.
TEST_F(ParallelLoadTest,
       AfterAnOverwriteByAnotherLoadTheStreamRefusesInsteadOfAppending) {
  Start(200);
  ASSERT_TRUE(Load(Parallel()).success);
  loader::LoadOptions overwrite = Options();
  overwrite.mode = loader::LoadMode::kOverwrite;
  ASSERT_TRUE(loader::LoadBatch(*amp_, kTransactions, Config(), overwrite).success);
  const auto version = Snapshot()->version();
  loader::LoadOptions stream = Options();
  stream.until_block = kFirst + 199;
  const auto streamed = loader::LoadStream(*amp_, kTransactions, Config(), stream);
  ASSERT_FALSE(streamed.success);
  EXPECT_THAT(streamed.error, ::testing::HasSubstr("--takeover"));
  EXPECT_FALSE(Load(Parallel()).success);
  EXPECT_EQ(Snapshot()->version(), version);
  ExpectCanonical(200);
}

TEST_F(ParallelLoadTest, ShardsCuttingOneRangeDifferentlyAreRefused) {
  Start(200);
  loader::ParallelOptions shard = Parallel();
  shard.max_block = kFirst + 150;
  shard.shard_count = 2;
  shard.partition_size = 30;
  ASSERT_TRUE(Load(shard).success);
  shard.shard_index = 1;
  shard.partition_size = 40;
  const auto refused = Load(shard);
  ASSERT_FALSE(refused.success);
  EXPECT_THAT(refused.error, ::testing::HasSubstr("same --partition-size and --shards"));
}

TEST_F(ParallelLoadTest, ShardsWithDifferentWorkerCountsCutTheSameGrid) {
  Start(200);
  std::vector<loader::LoadResult> results(2);
  std::vector<std::thread> shards;
  for (int i = 0; i < 2; ++i) {
    shards.emplace_back([&, i] {
      loader::ParallelOptions parallel = Parallel();
      parallel.max_block = kFirst + 150;
      parallel.shard_index = i;
      parallel.shard_count = 2;
      parallel.num_workers = i == 0 ? 2 : 3;
      results[static_cast<size_t>(i)] = Load(parallel);
    });
  }
  for (auto& thread : shards) thread.join();
  for (const auto& result : results) ASSERT_TRUE(result.success) << result.error;
  ExpectExactlyOnce(kFirst, kFirst + 150);
}

TEST_F(ParallelLoadTest, ThenStreamFollowsTheChainFromTheBackfillsLastBlock) {
  devserver::LiveOptions live;
  live.block_interval = std::chrono::milliseconds(5);
  live.max_head = kFirst + 499;
  live.reorg_every = 9;
  live.reorg_depth = 2;
  Start(300, live);
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 4;
  parallel.then_stream = true;
  loader::LoadOptions options = Options();
  options.until_block = kFirst + 499;
  options.stream_commit_interval = std::chrono::milliseconds(10);
  const auto result =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, parallel);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_NE(result.metadata.count("handoff_block"), 0u);
  ExpectCanonical(500);
}

// Four partitions of 20 blocks, one worker (a commit each, versions 0..3 in order).
loader::ParallelOptions FourPartitions() {
  loader::ParallelOptions parallel;
  parallel.reorg_buffer = 10;
  parallel.num_workers = 1;
  parallel.partition_size = 20;
  parallel.min_block = kFirst;
  parallel.max_block = kFirst + 79;
  return parallel;
}

// A restore takes two partitions' rows back but not their records: the re-run loads
// them again (it used to trust the records, load nothing and exit 0 with a gap), and a
// stream refuses to continue after the gap until it does.
TEST_F(ParallelLoadTest, ARerunAfterARestoreLoadsThePartitionsTheRestoreTookBack) {
  Start(100);
  ASSERT_TRUE(Load(FourPartitions()).success);
  auto store = *storage::OpenObjectStore(table_);
  ASSERT_OK(delta::Restore(store, 1).status());  // the first two partitions
  const auto stream = loader::LoadStream(*amp_, kTransactions, Config(), Options());
  ASSERT_FALSE(stream.success);
  EXPECT_THAT(stream.error, ::testing::HasSubstr("24000040-24000079 are missing"));
  const auto again = Load(FourPartitions());
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(again.rows_loaded, 40 * kTxsPerBlock);
  EXPECT_EQ(loader::MetadataText(again.metadata.at("partitions_loaded")), "2");
  EXPECT_EQ(loader::MetadataText(again.metadata.at("stale_records")),
            "24000040-24000079");
  ExpectExactlyOnce(kFirst, kFirst + 79);
  // Now complete, a further run loads nothing.
  const auto third = Load(FourPartitions());
  ASSERT_TRUE(third.success) << third.error;
  EXPECT_EQ(third.rows_loaded, 0);
  ExpectExactlyOnce(kFirst, kFirst + 79);
}

// An overwrite by a plain load keeps the blocks it wrote; the re-run loads the rest.
TEST_F(ParallelLoadTest, ARerunAfterAnOverwriteOfWholePartitionsLoadsTheRest) {
  Start(100);
  ASSERT_TRUE(Load(FourPartitions()).success);
  loader::LoadOptions overwrite = Options();
  overwrite.mode = loader::LoadMode::kOverwrite;
  const std::string first_two = std::string(kTransactions) +
                                " WHERE block_num >= 24000000 AND block_num <= 24000039";
  ASSERT_TRUE(loader::LoadBatch(*amp_, first_two, Config(), overwrite).success);
  const auto again = Load(FourPartitions());
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(again.rows_loaded, 40 * kTxsPerBlock);
  ExpectExactlyOnce(kFirst, kFirst + 79);
}

// An overwrite that keeps part of a partition's blocks leaves neither a safe reload
// nor a complete table: refused, naming the blocks, the table kept.
TEST_F(ParallelLoadTest, AnOverwriteKeepingPartOfAPartitionIsRefusedByTheRerun) {
  Start(100);
  ASSERT_TRUE(Load(FourPartitions()).success);
  loader::LoadOptions overwrite = Options();
  overwrite.mode = loader::LoadMode::kOverwrite;
  const std::string some = std::string(kTransactions) +
                           " WHERE block_num >= 24000000 AND block_num <= 24000029";
  ASSERT_TRUE(loader::LoadBatch(*amp_, some, Config(), overwrite).success);
  const auto before = Snapshot()->version();
  const auto again = Load(FourPartitions());
  ASSERT_FALSE(again.success);
  EXPECT_THAT(again.error,
              ::testing::HasSubstr("blocks 24000020-24000039 of mainnet hold "
                                   "30 of the 60 rows"));
  EXPECT_TRUE(IsError(again.status, ErrorCode::kCorruptLog)) << again.status.ToString();
  EXPECT_EQ(Snapshot()->version(), before);
}

// Records aged out by delta.setTransactionRetentionDuration: the tags still say what
// the table holds, and the re-run loads nothing (it used to load every row again).
TEST_F(ParallelLoadTest, ARerunAfterTheRecordsExpiredLoadsNothingTwice) {
  Start(120);
  const std::string retention =
      R"({"delta.setTransactionRetentionDuration": "interval 1 millisecond"})";
  auto run = [&](const loader::ParallelOptions& parallel) {
    return loader::LoadParallel(*amp_, kTransactions, Config(false, retention), Options(),
                                parallel);
  };
  ASSERT_TRUE(run(FourPartitions()).success);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  loader::ParallelOptions later = FourPartitions();
  later.min_block = kFirst + 80;
  later.max_block = kFirst + 99;
  ASSERT_TRUE(run(later).success);  // a later commit ages the first run's records out
  const auto snapshot = Snapshot();
  EXPECT_FALSE(
      snapshot
          ->AppTransactionVersion(loader::BackfillPartitionAppId(
              loader::StreamAppId(kTransactions), "mainnet", {kFirst, kFirst + 19}))
          .has_value());
  const auto again = run(FourPartitions());
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(again.rows_loaded, 0);
  ExpectExactlyOnce(kFirst, kFirst + 99);
}

// What every partition would refuse is refused once, before the first partition runs,
// as bad input (it used to be retried per partition, repeated, and reported as a server
// error advising a re-run).
TEST_F(ParallelLoadTest, WriteOptionsEveryPartitionWouldRefuseAreBadInputBeforeAnyRuns) {
  Start(100);
  struct Case {
    const char* what;
    std::function<void(loader::DeltaLakeConfig*, loader::LoadOptions*)> set;
    const char* words;
  };
  const std::vector<Case> cases = {
      {"codec", [](auto*, auto* o) { o->compression = "bogus"; }, "bogus"},
      {"partition column", [](auto* c, auto*) { c->partition_by = {"nope"}; }, "nope"},
      {"every column",
       [](auto* c, auto*) {
         c->partition_by = {"block_num", "tx_index", "block_hash"};
       },
       "partition"},
      {"partition and cluster",
       [](auto* c, auto*) {
         c->partition_by = {"tx_index"};
         c->cluster_by = std::vector<std::string>{"block_num"};
       },
       "cluster"},
  };
  for (const auto& c : cases) {
    loader::DeltaLakeConfig config = Config();
    loader::LoadOptions options = Options();
    int sleeps = 0;
    options.sleep = [&sleeps](std::chrono::milliseconds) { ++sleeps; };
    c.set(&config, &options);
    loader::ParallelOptions parallel = Parallel();
    parallel.num_workers = 2;
    parallel.partition_size = 10;
    const auto refused =
        loader::LoadParallel(*amp_, kTransactions, config, options, parallel);
    ASSERT_FALSE(refused.success) << c.what;
    EXPECT_TRUE(IsError(refused.status, ErrorCode::kInvalidInput))
        << c.what << ": " << refused.status.ToString();
    EXPECT_THAT(refused.error, ::testing::HasSubstr(c.words)) << c.what;
    EXPECT_EQ(refused.error.find("partition_size"), std::string::npos) << refused.error;
    EXPECT_EQ(refused.error.find("run the same command again"), std::string::npos)
        << c.what << ": " << refused.error;
    EXPECT_EQ(sleeps, 0) << c.what;
    EXPECT_FALSE(storage::OpenObjectStore(table_)
                     .ValueOrDie()
                     ->Head("_delta_log/00000000000000000000.json")
                     .ok())
        << c.what;
  }
}

// A failure no retry cures (a full disk, say) is not retried per partition, and the
// backfill reports its class, not the server's.
TEST_F(ParallelLoadTest, APartitionsPermanentFailureIsNotRetriedAndKeepsItsClass) {
  Start(100);
  auto inner = storage::OpenObjectStore(table_).ValueOrDie();
  auto faults = std::make_shared<storage::FaultStore>(inner);
  storage::FaultRule full;
  full.op = storage::StoreOp::kOpenOutputStream;
  full.path_contains = ".parquet";
  full.nth = 0;
  full.message = "No space left on device";
  full.subcode = "ENOSPC";
  faults->AddRule(full);
  loader::LoadOptions options = Options();
  options.store = faults;
  int sleeps = 0;
  options.sleep = [&sleeps](std::chrono::milliseconds) { ++sleeps; };
  loader::ParallelOptions parallel = Parallel();
  parallel.num_workers = 1;
  parallel.partition_size = 30;
  parallel.max_block = kFirst + 59;
  const auto failed =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, parallel);
  ASSERT_FALSE(failed.success);
  EXPECT_EQ(ClassifyError(failed.status), ErrorClass::kStorage)
      << failed.status.ToString();
  EXPECT_EQ(sleeps, 0);
  EXPECT_EQ(loader::MetadataText(failed.metadata.at("partitions_failed")), "2");
}

// A stream taking over from a block inside the backfill's range replaces the backfill's
// rows from that block on: the block before it stays, nothing is lost or doubled, and a
// backfill re-run (whose records the stream's rows now back) loads nothing.
TEST_F(ParallelLoadTest, AStreamTakingOverInsideTheBackfillLosesNoBlock) {
  Start(150);
  loader::ParallelOptions parallel = FourPartitions();
  parallel.max_block = kFirst + 99;
  ASSERT_TRUE(Load(parallel).success);
  loader::LoadOptions options = Options();
  options.takeover = loader::TakeoverMode::kFromBlock;
  options.takeover_block = kFirst + 60;
  options.until_block = kFirst + 149;
  const auto streamed = loader::LoadStream(*amp_, kTransactions, Config(), options);
  ASSERT_TRUE(streamed.success) << streamed.error;
  ExpectExactlyOnce(kFirst, kFirst + 149);
  const auto again = Load(parallel);
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(again.rows_loaded, 0);
  ExpectExactlyOnce(kFirst, kFirst + 149);
}

// A restore that lands while a re-run's partition loads puts that partition's file back:
// the partition's commit conflicts with it and re-plans, instead of adding the blocks
// a second time.
TEST_F(ParallelLoadTest, ARestoreLandingWhileAPartitionLoadsIsNotLoadedTwice) {
  Start(100);
  ASSERT_TRUE(Load(FourPartitions()).success);  // versions 0..3
  auto inner = storage::OpenObjectStore(table_).ValueOrDie();
  ASSERT_OK(delta::Restore(inner, 0).status());  // version 4: one partition
  const loader::LoadOptions options =
      RacedAtCommit(5, [inner] { ASSERT_OK(delta::Restore(inner, 3).status()); });
  const auto rerun =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, FourPartitions());
  ASSERT_TRUE(rerun.success) << rerun.error;
  ExpectExactlyOnce(kFirst, kFirst + 79);
}

// An overwrite that lands while a partition loads, writing rows in its blocks: the
// partition's commit conflicts, and the re-plan refuses the blocks as another writer's.
TEST_F(ParallelLoadTest, AnOverwriteLandingWhileAPartitionLoadsIsNotLoadedTwice) {
  Start(100);
  const loader::LoadOptions options = RacedAtCommit(1, [this] {
    loader::LoadOptions overwrite = Options();
    overwrite.mode = loader::LoadMode::kOverwrite;
    const std::string some = std::string(kTransactions) +
                             " WHERE block_num >= 24000020 AND block_num <= 24000039";
    ASSERT_TRUE(loader::LoadBatch(*amp_, some, Config(), overwrite).success);
  });
  const auto run =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, FourPartitions());
  ASSERT_FALSE(run.success);
  EXPECT_THAT(run.error, ::testing::HasSubstr("another writer"));
  for (const auto& [block, rows] : RowsPerBlock()) {
    ASSERT_EQ(rows, kTxsPerBlock) << "block " << block;
  }
}

// A partition whose blocks hold no rows of the query still leaves its tag, on a file
// without rows: once its record expires, the re-run still loads nothing.
TEST_F(ParallelLoadTest, EmptyPartitionsOutliveTheirExpiredRecords) {
  Start(100);
  const std::string none = std::string(kTransactions) + " WHERE tx_index > 100";
  const std::string retention =
      R"({"delta.setTransactionRetentionDuration": "interval 1 millisecond"})";
  auto run = [&](const loader::ParallelOptions& parallel) {
    return loader::LoadParallel(*amp_, none, Config(false, retention), Options(),
                                parallel);
  };
  ASSERT_TRUE(run(FourPartitions()).success);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  loader::ParallelOptions later = FourPartitions();
  later.min_block = kFirst + 80;
  later.max_block = kFirst + 89;
  ASSERT_TRUE(run(later).success);  // ages the first run's records out
  const auto again = run(FourPartitions());
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(loader::MetadataText(again.metadata.at("partitions_loaded")), "0");
  EXPECT_EQ(loader::MetadataText(again.metadata.at("partitions")),
            "0");  // nothing left to plan
  EXPECT_TRUE(RowsPerBlock().empty());
}

// Shards cutting one range on different grids, started together: the grid check sees
// only committed plans, so a commit also conflicts with another grid's plan record, and
// the re-plan refuses; no block is loaded twice.
TEST_F(ParallelLoadTest, ShardsOnDifferentGridsStartedTogetherAreRefused) {
  Start(150);
  std::vector<loader::LoadResult> results(2);
  std::vector<std::thread> shards;
  for (int i = 0; i < 2; ++i) {
    shards.emplace_back([&, i] {
      loader::ParallelOptions parallel = Parallel();
      parallel.num_workers = 2;
      parallel.partition_size = i == 0 ? 10 : 15;
      parallel.max_block = kFirst + 119;
      parallel.shard_index = i;
      parallel.shard_count = 2;
      results[static_cast<size_t>(i)] = Load(parallel);
    });
  }
  for (auto& shard : shards) shard.join();
  const int refused = (results[0].success ? 0 : 1) + (results[1].success ? 0 : 1);
  EXPECT_GE(refused, 1);
  for (const auto& result : results) {
    if (result.success) continue;
    EXPECT_TRUE(IsError(result.status, ErrorCode::kInvalidInput)) << result.error;
    EXPECT_THAT(result.error, ::testing::HasSubstr("another shard cut"));
  }
  for (const auto& [block, rows] : RowsPerBlock()) {
    ASSERT_EQ(rows, kTxsPerBlock) << "block " << block;
  }
}

// Blocks missing at the end of a run whose partitions all succeeded: the table changed
// under it (a restore took a committed partition back). That is a conflict, not a
// server error.
TEST_F(ParallelLoadTest, ATableChangedUnderTheRunIsReportedAsAConflict) {
  Start(100);
  auto inner = storage::OpenObjectStore(table_).ValueOrDie();
  const loader::LoadOptions options =
      RacedAtCommit(3, [inner] { ASSERT_OK(delta::Restore(inner, 0).status()); });
  const auto run =
      loader::LoadParallel(*amp_, kTransactions, Config(), options, FourPartitions());
  ASSERT_FALSE(run.success);
  EXPECT_TRUE(IsError(run.status, ErrorCode::kCommitConflict)) << run.status.ToString();
  EXPECT_EQ(loader::MetadataText(run.metadata.at("partitions_failed")), "0");
  EXPECT_THAT(run.error,
              ::testing::HasSubstr("the table changed while the backfill ran"));
}

}  // namespace
}  // namespace ampdelta
