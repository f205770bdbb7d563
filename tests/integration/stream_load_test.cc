// Streaming loads against the in-process dev server: scripted reorgs (at the head, across
// a commit group, partial, right after a restart), disconnects, two loaders on one
// stream. After each scenario the table must hold exactly the canonical chain's rows.

#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include <arrow/array.h>
#include <arrow/array/util.h>
#include <arrow/table.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/amp/fed_stream.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/status.h"
#include "tests/support/faulty_amp_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta {
namespace {

constexpr uint64_t kFirst = 24'000'000;
constexpr const char* kBlocks =
    R"(SELECT block_num, hash, gas_used FROM "acme/eth_mainnet".blocks)";

class StreamLoadTest : public ::testing::Test {
 protected:
  void Start(devserver::DevServerOptions options) {
    ASSERT_OK_AND_ASSIGN(server_, devserver::DevServer::Start(std::move(options)));
    ASSERT_OK_AND_ASSIGN(amp_, amp::Client::Connect(server_->url()));
    table_ = dir_.path() + "/blocks";
  }

  // A chain that grows every few ms from 100 blocks to `blocks`, reorging on schedule.
  void StartLive(uint64_t blocks, uint64_t reorg_every = 0, uint64_t reorg_depth = 1,
                 uint64_t microbatch_blocks = 1000) {
    devserver::DevServerOptions options;
    options.live.block_interval = std::chrono::milliseconds(5);
    options.live.max_head = kFirst + blocks - 1;
    options.live.reorg_every = reorg_every;
    options.live.reorg_depth = reorg_depth;
    options.stream.max_microbatch_blocks = microbatch_blocks;
    Start(std::move(options));
  }

  loader::DeltaLakeConfig Config() {
    auto config = loader::ParseDeltaLakeConfig(
        R"({"table_path": ")" + table_ +
        R"(", "optimize_after_write": false, "resilience": {"retry": {"initial_backoff_ms": 10}}})");
    EXPECT_OK(config.status());
    return *config;
  }

  loader::LoadOptions Options(uint64_t until) {
    loader::LoadOptions options;
    options.destination = "blocks";
    options.until_block = until;
    options.stream_commit_interval = std::chrono::milliseconds(20);
    options.on_result = [this](const loader::LoadResult& result) {
      std::lock_guard<std::mutex> lock(mutex_);
      results_.push_back(result);
    };
    return options;
  }

  loader::LoadResult Stream(uint64_t until, amp::Client* client = nullptr) {
    const auto config = Config();
    return loader::LoadStream(client ? *client : *amp_, kBlocks, config, Options(until));
  }

  // block_num -> hash, from a batch query (the canonical chain now).
  std::map<int64_t, std::string> Canonical() {
    auto stream = amp_->Query(R"(SELECT block_num, hash FROM "acme/eth_mainnet".blocks)");
    EXPECT_OK(stream.status());
    std::map<int64_t, std::string> out;
    while (true) {
      auto message = (*stream)->Next();
      EXPECT_OK(message.status());
      if (!message.ok() || !message->has_value()) break;
      const auto& batch = (*message)->data;
      for (int64_t i = 0; i < batch->num_rows(); ++i) {
        const auto number =
            static_cast<const arrow::UInt64Scalar&>(**batch->column(0)->GetScalar(i))
                .value;
        const auto& hash =
            static_cast<const arrow::FixedSizeBinaryArray&>(*batch->column(1));
        out[static_cast<int64_t>(number)] =
            ToHex0x(std::string_view(reinterpret_cast<const char*>(hash.GetValue(i)),
                                     static_cast<size_t>(hash.byte_width())));
      }
    }
    return out;
  }

  std::shared_ptr<const delta::Snapshot> Snapshot() {
    return *delta::Snapshot::Load(*storage::OpenObjectStore(table_));
  }

  // (block_num, hash, _amp_batch_id) rows of the table, sorted.
  std::vector<std::tuple<int64_t, std::string, std::string>> TableRows() {
    auto scan = delta::TableScan::Make(
        Snapshot(), {{"block_num", "hash", "_amp_batch_id"}, std::nullopt});
    EXPECT_OK(scan.status());
    auto table = *(*scan)->ToTable();
    auto batch = *table->CombineChunksToBatch();
    std::vector<std::tuple<int64_t, std::string, std::string>> rows;
    const auto& numbers = static_cast<const arrow::Int64Array&>(*batch->column(0));
    const auto& hashes = static_cast<const arrow::BinaryArray&>(*batch->column(1));
    const auto& ids = static_cast<const arrow::StringArray&>(*batch->column(2));
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      rows.emplace_back(numbers.Value(i), ToHex0x(hashes.GetView(i)), ids.GetString(i));
    }
    std::sort(rows.begin(), rows.end());
    return rows;
  }

  // The table equals the canonical chain from kFirst to `last`: every block once, with
  // the canonical hash, and its _amp_batch_id is the SDK's id of a recorded range holding
  // it, or a recorded span (which ends at a canonical hash) holds it.
  void ExpectCanonical(uint64_t last, uint64_t first = kFirst) {
    const auto canonical = Canonical();
    const auto rows = TableRows();
    ASSERT_EQ(rows.size(), last - first + 1);
    auto state = *loader::ReadStreamState(Snapshot().get(), loader::StreamAppId(kBlocks));
    std::map<std::string, amp::BlockRange> by_id;
    for (const auto& range : state.ranges["mainnet"])
      by_id[loader::BatchId(range)] = range;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& [number, hash, id] = rows[i];
      ASSERT_EQ(number, static_cast<int64_t>(first + i)) << "block missing or repeated";
      EXPECT_EQ(hash, canonical.at(number)) << "block " << number << " is not canonical";
      const auto block = static_cast<uint64_t>(number);
      auto range = by_id.find(id);
      if (range == by_id.end()) {
        const auto& spans = state.spans["mainnet"];
        ASSERT_TRUE(std::any_of(
            spans.begin(), spans.end(),
            [&](const auto& span) { return span.start <= block && block <= span.end; }))
            << "block " << number << " has batch id " << id
            << ", which no range names, and no span holds it";
        continue;
      }
      EXPECT_LE(range->second.start, block);
      EXPECT_GE(range->second.end, block);
    }
    for (const auto& span : state.spans["mainnet"]) {
      EXPECT_EQ(span.hash, canonical.at(static_cast<int64_t>(span.end)))
          << "span " << span.ToString() << " does not end at the canonical hash";
    }
  }

  // Every block from `first` to `last` once, with the canonical hash, whoever wrote it.
  void ExpectEachBlockOnce(uint64_t last, uint64_t first = kFirst) {
    const auto canonical = Canonical();
    const auto rows = TableRows();
    ASSERT_EQ(rows.size(), last - first + 1);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& [number, hash, id] = rows[i];
      ASSERT_EQ(number, static_cast<int64_t>(first + i)) << "block missing or repeated";
      EXPECT_EQ(hash, canonical.at(number)) << "block " << number << " is not canonical";
    }
  }

  // Rows another writer loaded: a batch load of the stream's query (no block-range tags).
  void LoadForeignRows(uint64_t below) {
    loader::LoadOptions options;
    options.destination = "blocks";
    const auto loaded = loader::LoadBatch(
        *amp_, std::string(kBlocks) + " WHERE block_num < " + std::to_string(below),
        Config(), options);
    ASSERT_TRUE(loaded.success) << loaded.error;
  }

  // Wait until the table records block `block` as committed by the stream.
  void WaitUntilCommitted(uint64_t block) {
    while (true) {
      auto loaded = delta::Snapshot::Load(*storage::OpenObjectStore(table_));
      if (loaded.ok()) {
        auto state =
            *loader::ReadStreamState(loaded->get(), loader::StreamAppId(kBlocks));
        if (state.ResumeCursor()["mainnet"].number >= block) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  int Reorgs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(std::count_if(results_.begin(), results_.end(),
                                          [](const auto& r) { return r.is_reorg; }));
  }

  ampdelta::testing::TempDir dir_;
  std::unique_ptr<devserver::DevServer> server_;
  std::unique_ptr<amp::Client> amp_;
  std::string table_;
  std::mutex mutex_;
  std::vector<loader::LoadResult> results_;
};

TEST_F(StreamLoadTest, ARestoreWhileStreamingIsRefilledFromTheTablesState) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 10;
  Start(std::move(options));  // a still chain, advanced by hand: no race with the restore
  loader::LoadResult result;
  std::thread loader_thread([&] { result = Stream(kFirst + 159); });
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->AdvanceHead(11));
  WaitUntilCommitted(kFirst + 110);
  // Take the table back to its first commit while the stream runs: the blocks after it
  // are gone from the table, and the stream must notice and load them again.
  ASSERT_OK(delta::Restore(*storage::OpenObjectStore(table_), 0).status());
  ASSERT_OK(server_->AdvanceHead(49));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.metadata.count("rollbacks"), 1u);
  ExpectCanonical(kFirst + 159);
}

// Restores to many versions: after a restore took the stream back (and it started to
// refill), a restore to a later version gives back blocks the stream holds again in
// memory. The stream must resume from the table, not load those blocks a second time.
TEST_F(StreamLoadTest, ARestoreThatGivesBackBlocksTheStreamIsRefillingIsNotLoadedTwice) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 10;
  Start(std::move(options));  // a still chain of 100 blocks, advanced by hand
  ASSERT_OK_AND_ASSIGN(auto inner, storage::OpenObjectStore(table_));
  auto faulty = std::make_shared<storage::FaultStore>(inner);
  loader::LoadResult result;
  std::thread loader_thread([&] {
    auto stream_options = Options(kFirst + 130);
    stream_options.store = faulty;
    result = loader::LoadStream(*amp_, kBlocks, Config(), stream_options);
  });
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->AdvanceHead(10));
  WaitUntilCommitted(kFirst + 109);
  const delta::Version full = Snapshot()->version();  // at least 1: blocks to 109
  ASSERT_OK(delta::Restore(inner, 0).status());       // full + 1: blocks to 99 at most
  // The stream notices at its next commit, reloads from version 0's blocks and commits
  // version full + 2; right before that lands, the table is restored to `full` again.
  char name[64];
  std::snprintf(name, sizeof(name), "_delta_log/%020lld.json",
                static_cast<long long>(full + 2));
  storage::FaultRule rule;
  rule.op = storage::StoreOp::kPut;
  rule.path_contains = name;
  rule.fail = false;
  rule.before = [&] { ASSERT_OK(delta::Restore(inner, full).status()); };
  faulty->AddRule(rule);
  ASSERT_OK(server_->AdvanceHead(21));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(faulty->faults_fired(), 1);
  ExpectCanonical(kFirst + 130);
}

// A stream bounded by --until-block that is rolled back after it saw the last block must
// still load every block up to it before it ends (not stop after the first refilled one).
TEST_F(StreamLoadTest, ARollbackAfterTheUntilBlockArrivedStillLoadsUpToIt) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 10;
  Start(std::move(options));
  loader::LoadResult result;
  std::thread loader_thread([&] { result = Stream(kFirst + 119); });
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->AdvanceHead(10));
  WaitUntilCommitted(kFirst + 109);
  ASSERT_OK(delta::Restore(*storage::OpenObjectStore(table_), 0).status());
  ASSERT_OK(
      server_->AdvanceHead(10));  // the until block arrives; its commit is rolled back
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.metadata.count("rollbacks"), 1u);
  ExpectCanonical(kFirst + 119);
}

// A delete of the newest blocks while streaming: the stream notices and loads what the
// table lacks again, whether the delete removed whole files or rewrote one that held
// blocks on both sides of its predicate.
// A delete is the user's decision about rows, not a loss of progress: neither the running
// stream nor a restarted one reloads the deleted blocks, also when the delete removed
// whole files (their recorded ranges stay on the delete's output, an empty file if need
// be).
TEST_F(StreamLoadTest, ADeleteOfTheNewestBlocksWhileStreamingIsNotReloaded) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 10;
  Start(std::move(options));
  loader::LoadResult result;
  std::thread loader_thread([&] { result = Stream(kFirst + 130); });
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->AdvanceHead(20));
  WaitUntilCommitted(kFirst + 119);
  ASSERT_OK(delta::DeleteRows(*storage::OpenObjectStore(table_),
                              "block_num >= " + std::to_string(kFirst + 105))
                .status());
  ASSERT_OK(server_->AdvanceHead(11));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  auto expect_rows = [&] {
    std::vector<int64_t> numbers;
    for (const auto& row : TableRows()) numbers.push_back(std::get<0>(row));
    std::vector<int64_t> expected;
    for (uint64_t block = kFirst; block <= kFirst + 130; ++block) {
      if (block < kFirst + 105 || block > kFirst + 119) expected.push_back(block);
    }
    EXPECT_EQ(numbers, expected);
  };
  expect_rows();
  ASSERT_TRUE(Stream(kFirst + 130).success);
  expect_rows();
}

// Deleting every row of a streamed table keeps the stream's progress on an empty file, so
// a restarted stream goes on from where it was instead of loading everything again; a
// compaction of such empty files keeps their ranges on one, and deleting from a table
// with no rows left commits nothing.
TEST_F(StreamLoadTest, DeletingEveryRowKeepsTheStreamsProgress) {
  Start(devserver::DevServerOptions{});
  ASSERT_TRUE(Stream(kFirst + 99).success);
  auto store = *storage::OpenObjectStore(table_);
  ASSERT_OK(delta::DeleteAllRows(store).status());
  EXPECT_TRUE(TableRows().empty());
  auto cursor = [&] {
    auto state = *loader::ReadStreamState(Snapshot().get(), loader::StreamAppId(kBlocks));
    return state.ResumeCursor()["mainnet"].number;
  };
  EXPECT_EQ(cursor(), kFirst + 99);
  ASSERT_OK(server_->AdvanceHead(5));
  ASSERT_TRUE(Stream(kFirst + 104).success);
  std::vector<int64_t> numbers;
  for (const auto& row : TableRows()) numbers.push_back(std::get<0>(row));
  EXPECT_EQ(numbers, (std::vector<int64_t>{kFirst + 100, kFirst + 101, kFirst + 102,
                                           kFirst + 103, kFirst + 104}));
  // The new file goes whole: a second empty file holds its ranges.
  ASSERT_OK(
      delta::DeleteRows(store, "block_num >= " + std::to_string(kFirst + 100)).status());
  EXPECT_EQ(Snapshot()->files().size(), 2u);
  ASSERT_OK_AND_ASSIGN(auto optimized, delta::Optimize(store));
  EXPECT_EQ(optimized.files_removed, 2);
  EXPECT_EQ(optimized.files_added, 1);
  EXPECT_EQ(cursor(), kFirst + 104);
  const auto version = Snapshot()->version();
  ASSERT_OK_AND_ASSIGN(auto again, delta::DeleteAllRows(store));
  EXPECT_FALSE(again.version.has_value());
  EXPECT_EQ(Snapshot()->version(), version);
  ASSERT_TRUE(Stream(kFirst + 104).success);
  EXPECT_TRUE(TableRows().empty());
}

// Restores to random versions, compactions and full vacuums with zero retention while a
// stream follows a reorging chain: after a restart (the last action may land after the
// stream ended) every block is there once with its canonical hash, and every file the log
// names exists. CHAOS_SEED picks another run.
TEST_F(StreamLoadTest, ChaosRestoresOptimizesAndVacuumsWhileStreamingAReorgingChain) {
  const char* seed_text = std::getenv("CHAOS_SEED");
  const unsigned seed = seed_text ? static_cast<unsigned>(std::atoi(seed_text)) : 1;
  StartLive(/*blocks=*/400, /*reorg_every=*/13, /*depth=*/3, /*microbatch_blocks=*/5);
  loader::LoadResult result;
  std::atomic<bool> done{false};
  std::thread loader_thread([&] {
    result = Stream(kFirst + 399);
    done = true;
  });
  WaitUntilCommitted(kFirst + 99);
  std::mt19937 rng(seed);
  int restores = 0, failed_restores = 0, optimizes = 0, vacuums = 0;
  auto store = *storage::OpenObjectStore(table_);
  while (!done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + rng() % 40));
    const int action = static_cast<int>(rng() % 4);
    if (action <= 1) {
      const auto latest = Snapshot()->version();
      const delta::Version target = static_cast<delta::Version>(rng() % (latest + 1));
      auto restored = delta::Restore(store, target);
      if (restored.ok()) {
        ++restores;
      } else {
        ++failed_restores;
        EXPECT_TRUE(IsError(restored.status(), ErrorCode::kInvalidInput) ||
                    IsError(restored.status(), ErrorCode::kCommitConflict))
            << restored.status().ToString();
      }
    } else if (action == 2) {
      auto optimized = delta::Optimize(store);
      if (optimized.ok()) ++optimizes;
    } else {
      delta::VacuumOptions vacuum;
      vacuum.full = true;
      vacuum.retention_hours = 0;
      vacuum.enforce_retention = false;
      auto vacuumed = delta::Vacuum(store, vacuum);
      EXPECT_OK(vacuumed.status());
      ++vacuums;
    }
  }
  loader_thread.join();
  std::cerr << "seed=" << seed << " restores=" << restores
            << " failed=" << failed_restores << " optimizes=" << optimizes
            << " vacuums=" << vacuums << " rollbacks="
            << (result.metadata.count("rollbacks")
                    ? loader::MetadataText(result.metadata.at("rollbacks"))
                    : "0")
            << "\n";
  ASSERT_TRUE(result.success) << result.error;
  // The last action may have landed after the stream ended: a restart fills what it took.
  auto again = Stream(kFirst + 399);
  ASSERT_TRUE(again.success) << again.error;
  ExpectCanonical(kFirst + 399);
  if (HasFailure()) {
    std::map<int64_t, int> counts;
    for (const auto& row : TableRows()) ++counts[std::get<0>(row)];
    std::string shown;
    for (const auto& [number, count] : counts) {
      if (count != 1)
        shown += " " + std::to_string(number - kFirst) + "x" + std::to_string(count);
    }
    for (uint64_t b = kFirst; b <= kFirst + 399; ++b) {
      if (counts.count(static_cast<int64_t>(b)) == 0)
        shown += " -" + std::to_string(b - kFirst);
    }
    std::cerr << "blocks (offset, xcount / -missing):" << shown << "\n";
  }
  auto latest = Snapshot();
  for (const auto& file : latest->files()) {
    EXPECT_TRUE(store->Head(latest->FileKey(file.path)).ok()) << file.path;
  }
}

// ampd reports every failure of a running stream as INTERNAL. An hour of chain (300
// blocks of 12 s) meets them: each reconnects from the table, and every block lands once.
// Each connection's six complete microbatches are committed before its failure is
// retried, so the 300 blocks take five connections: four reconnects.
TEST_F(StreamLoadTest, FiveInternalFailuresInAnHourOfChainLoseAndRepeatNothing) {
  devserver::DevServerOptions options;
  options.chain.initial_blocks = 300;
  options.stream.max_microbatch_blocks = 10;
  options.stream.fail_after_microbatches = 6;
  options.stream.max_failures = 5;
  Start(std::move(options));
  const auto result = Stream(kFirst + 299);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("reconnects")), "4");
  ExpectCanonical(kFirst + 299);
}

// The anvil case: a chain from block 0 whose first microbatch is reorged from inside. The
// block before it does not exist, so the stream starts that network over.
TEST_F(StreamLoadTest, AReorgInsideTheFirstMicrobatchOfAChainFromGenesisIsUndone) {
  devserver::DevServerOptions options;
  options.chain.start_block = 0;
  options.chain.initial_blocks = 7;  // 0..6, served as one microbatch
  options.live.reorg_at = {{8, 4}};  // at head 8, blocks 5..8 are replaced
  Start(std::move(options));
  loader::LoadResult result;
  std::thread loader_thread([&] { result = Stream(20); });
  WaitUntilCommitted(6);
  ASSERT_OK(server_->AdvanceHead(14));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_GE(Reorgs(), 1);
  ExpectCanonical(20, /*first=*/0);
}

TEST_F(StreamLoadTest, ADepthOneReorgOfTheCommittedHeadIsUndone) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 1;
  Start(options);
  loader::LoadResult result;
  std::thread loader_thread([&] { result = Stream(kFirst + 105); });
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->chain()->Reorg(1));  // block 99 gets a new hash
  ASSERT_OK(server_->AdvanceHead(6));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  ASSERT_EQ(Reorgs(), 1);
  const auto& reorg = *std::find_if(results_.begin(), results_.end(),
                                    [](const auto& r) { return r.is_reorg; });
  EXPECT_EQ(loader::MetadataText(reorg.metadata.at("rows_removed")), "1");
  ExpectCanonical(kFirst + 105);
}

// (The dev server's scheduled reorgs replace the block just added too, so depth d shows
// d-1 replaced blocks to a stream that follows the head.)
TEST_F(StreamLoadTest, ReorgsOfDepthTwoToFiveAtTheHeadLeaveExactlyTheCanonicalChain) {
  for (uint64_t depth : {2, 3, 5}) {
    SCOPED_TRACE("depth " + std::to_string(depth));
    results_.clear();
    StartLive(/*blocks=*/150, /*reorg_every=*/7, depth);  // last reorg at head 149 - 1
    const auto result = Stream(kFirst + 149);
    ASSERT_TRUE(result.success) << result.error;
    EXPECT_GT(Reorgs(), 0);
    ExpectCanonical(kFirst + 149);
    server_.reset();
    std::filesystem::remove_all(table_);
  }
}

// The Python SDK's load_stream_continuous: another client reads the stream and hands its
// messages over (amp::FedClient); the engine detects and undoes the reorgs in them as in
// a stream it reads itself. A second query (a reconnect) is refused, naming why.
TEST_F(StreamLoadTest, AStreamReadByAnotherClientAndHandedOverLoadsTheCanonicalChain) {
  // Microbatches of one block, so a reorg never cuts a range in two (a partial reorg
  // needs a query, which a handed-over stream refuses), and blocks slow enough for a
  // stream on a busy machine to see reorgs rather than only the chain they left.
  devserver::DevServerOptions options;
  options.live.block_interval = std::chrono::milliseconds(25);
  options.live.max_head = kFirst + 149;
  options.live.reorg_every = 7;
  options.live.reorg_depth = 3;
  options.stream.max_microbatch_blocks = 1;
  Start(std::move(options));
  amp::QueryOptions query;
  query.stream = true;
  ASSERT_OK_AND_ASSIGN(auto source, amp_->Query(kBlocks, query));
  auto channel = std::make_shared<amp::FedChannel>(source->schema());
  std::thread producer([&] {
    while (true) {
      auto message = source->Next();
      if (!message.ok()) return channel->Fail(message.status());
      if (!message->has_value()) return channel->Close();
      while (true) {
        auto pushed = channel->Push(std::move(**message), std::chrono::milliseconds(50));
        if (!pushed.ok()) return source->Cancel();  // the load is done with the stream
        if (*pushed) break;
      }
    }
  });
  amp::FedClient fed(channel, "handed-over");
  const auto result = Stream(kFirst + 149, &fed);
  // The live stream waits for blocks that never come: cancel it to end the producer.
  channel->Cancel();
  source->Cancel();
  producer.join();
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_GT(Reorgs(), 0);
  ExpectCanonical(kFirst + 149);
  auto again = fed.Query(kBlocks, query);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("cannot be read again"), std::string::npos);
}

TEST(FedChannelTest, PushWaitsForRoomSplitsRowsFromTheirEndAndFailsOnceCancelled) {
  auto schema = arrow::schema({arrow::field("n", arrow::int64())});
  auto channel = std::make_shared<amp::FedChannel>(schema, /*capacity=*/2);
  auto batch = [](const std::shared_ptr<arrow::Schema>& of, int64_t rows) {
    amp::ResponseBatch message;
    message.data = arrow::RecordBatch::Make(
        of, rows, {*arrow::MakeArrayOfNull(of->field(0)->type(), rows)});
    return message;
  };
  const auto wait = std::chrono::milliseconds(1);
  ASSERT_OK_AND_ASSIGN(bool queued, channel->Push(batch(schema, 0), wait));
  EXPECT_TRUE(queued);
  // Rows on the message that ends their microbatch need room for two: rows, then the end.
  amp::ResponseBatch rows_and_end = batch(schema, 3);
  rows_and_end.metadata.ranges_complete = true;
  ASSERT_OK_AND_ASSIGN(queued, channel->Push(rows_and_end, wait));
  EXPECT_FALSE(queued);  // no room for both
  EXPECT_FALSE(
      channel->Push(batch(arrow::schema({arrow::field("n", arrow::utf8())}), 0), wait)
          .ok());  // another schema
  ASSERT_OK_AND_ASSIGN(auto popped, channel->Pop());
  ASSERT_OK_AND_ASSIGN(queued, channel->Push(rows_and_end, wait));
  EXPECT_TRUE(queued);
  ASSERT_OK_AND_ASSIGN(popped, channel->Pop());
  EXPECT_EQ(popped->data->num_rows(), 3);
  EXPECT_FALSE(popped->metadata.ranges_complete);
  ASSERT_OK_AND_ASSIGN(popped, channel->Pop());
  EXPECT_EQ(popped->data->num_rows(), 0);
  EXPECT_TRUE(popped->metadata.ranges_complete);
  channel->Fail(arrow::Status::IOError("the producer failed"));
  auto failed = channel->Pop();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "the producer failed");
  channel->Cancel();
  EXPECT_TRUE(channel->Pop().status().IsCancelled());
  EXPECT_TRUE(channel->Push(batch(schema, 0), wait).status().IsCancelled());
}

TEST_F(StreamLoadTest, AReorgDeeperThanACommitGroupRewritesOnlyTheFilesHoldingIt) {
  StartLive(/*blocks=*/160, /*reorg_every=*/20, /*depth=*/8);
  loader::LoadOptions options = Options(kFirst + 159);
  options.stream_commit_rows =
      3;  // groups of a few blocks: the reorg spans several commits
  const auto result = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(result.success) << result.error;
  ASSERT_GT(Reorgs(), 0);
  ExpectCanonical(kFirst + 159);
  for (const auto& reorg : results_) {
    if (!reorg.is_reorg || reorg.metadata.count("files_touched") == 0) continue;
    // Only the invalidated blocks go (one row each): the fork's 8 blocks, or the whole
    // microbatch holding the fork when a lagging loader got several blocks in one.
    uint64_t invalidated = 0;
    for (const auto& range : reorg.invalidation_ranges)
      invalidated += range.end - range.start + 1;
    const int64_t removed =
        std::stoll(loader::MetadataText(reorg.metadata.at("rows_removed")));
    EXPECT_GE(removed, 1);
    EXPECT_LE(removed, static_cast<int64_t>(invalidated));
    // Each touched file holds a removed row: the rest of the table is left alone.
    EXPECT_LE(std::stoll(loader::MetadataText(reorg.metadata.at("files_touched"))),
              removed);
  }
}

TEST_F(StreamLoadTest,
       APartialReorgInvalidatesTheStraddlingMicrobatchAndResumesBeforeIt) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 50;
  Start(options);
  std::atomic<bool> done{false};
  loader::LoadResult result;
  std::thread loader_thread([&] {
    result = Stream(kFirst + 110);
    done = true;
  });
  // Wait until the microbatch 50..99 is committed, then fork at 97 (inside it).
  WaitUntilCommitted(kFirst + 99);
  ASSERT_OK(server_->chain()->Reorg(3));
  ASSERT_OK(server_->AdvanceHead(11));
  loader_thread.join();
  ASSERT_TRUE(result.success) << result.error;
  ASSERT_EQ(Reorgs(), 1);
  const auto& reorg = *std::find_if(results_.begin(), results_.end(),
                                    [](const auto& r) { return r.is_reorg; });
  EXPECT_EQ(loader::MetadataText(reorg.metadata.at("rows_removed")),
            "50");  // all of 50..99, not only 97..99
  ExpectCanonical(kFirst + 110);
}

TEST_F(StreamLoadTest, AReorgRightAfterARestartIsUndoneFromTheTablesState) {
  devserver::DevServerOptions options;
  options.stream.max_microbatch_blocks = 10;
  Start(options);
  auto first = Stream(kFirst + 99);
  ASSERT_TRUE(first.success) << first.error;
  const auto before = Snapshot()->version();
  // While the loader is down, the chain forks below its last block.
  ASSERT_OK(server_->chain()->Reorg(3));
  ASSERT_OK(server_->AdvanceHead(5));
  auto second = Stream(kFirst + 104);
  ASSERT_TRUE(second.success) << second.error;
  EXPECT_EQ(Reorgs(), 1);
  ExpectCanonical(kFirst + 104);
  // The version before the reorg stays readable.
  delta::SnapshotOptions at;
  at.version = before;
  ASSERT_OK_AND_ASSIGN(auto old,
                       delta::Snapshot::Load(*storage::OpenObjectStore(table_), at));
  EXPECT_EQ(old->CountLiveRecords(), std::optional<int64_t>(100));
}

TEST_F(StreamLoadTest, ARestartResumesAfterTheLastCommittedBlockWithoutRepeatingRows) {
  StartLive(/*blocks=*/180);
  ASSERT_TRUE(Stream(kFirst + 120).success);
  const auto commits_before = Snapshot()->version();
  const auto result = Stream(kFirst + 179);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_GT(Snapshot()->version(), commits_before);
  ExpectCanonical(kFirst + 179);
  auto state = *loader::ReadStreamState(Snapshot().get(), loader::StreamAppId(kBlocks));
  EXPECT_EQ(state.txn_version, std::optional<int64_t>(Snapshot()->version() + 1));
}

TEST_F(StreamLoadTest, ADisconnectMidMicrobatchReconnectsAndResumesFromTheTable) {
  StartLive(/*blocks=*/150, /*reorg_every=*/9, /*depth=*/2);
  // The first stream drops after 2 messages (the first microbatch's keep-alive and its
  // rows, before its marker), as a lost connection does. Counted in messages, not
  // blocks: how many blocks a microbatch holds depends on how far the chain got.
  testing::FaultyAmpClient dropping(amp_.get(),
                                    {.failing_streams = 1, .messages_before_failure = 2});
  loader::LoadOptions options = Options(kFirst + 149);
  std::vector<std::chrono::milliseconds> waits;
  options.sleep = [&waits](std::chrono::milliseconds delay) { waits.push_back(delay); };
  const auto result = loader::LoadStream(dropping, kBlocks, Config(), options);
  ASSERT_TRUE(result.success) << result.error;
  // The reconnect waited its back-off through the injected clock, in stop-checking
  // slices.
  ASSERT_FALSE(waits.empty());
  for (const auto& wait : waits) EXPECT_LE(wait.count(), 50);
  EXPECT_GE(dropping.queries, 2);
  std::string metadata;
  for (const auto& [key, value] : result.metadata) {
    metadata += key + "=" + loader::MetadataText(value) + " ";
  }
  auto reconnects = result.metadata.find("reconnects");
  ASSERT_NE(reconnects, result.metadata.end()) << metadata;
  EXPECT_EQ(loader::MetadataText(reconnects->second), "1") << metadata;
  ExpectCanonical(kFirst + 149);
}

TEST_F(StreamLoadTest, WithoutReorgDetectionNothingIsUndone) {
  StartLive(/*blocks=*/130, /*reorg_every=*/10, /*depth=*/3);
  loader::LoadOptions options = Options(kFirst + 129);
  options.with_reorg_detection = false;
  const auto result = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_undone")), "0");
  const auto rows = TableRows();
  std::set<int64_t> distinct;
  for (const auto& row : rows) distinct.insert(std::get<0>(row));
  EXPECT_EQ(distinct.size(), 130u);
  EXPECT_GT(rows.size(), distinct.size());  // the reorged blocks are there twice
}

TEST_F(StreamLoadTest, LongStreamsCompactFinalisedFilesAndKeepTheirState) {
  StartLive(/*blocks=*/260, /*reorg_every=*/11, /*depth=*/3, /*microbatch_blocks=*/1);
  auto config = *loader::ParseDeltaLakeConfig(R"({"table_path": ")" + table_ + R"("})");
  loader::LoadOptions options = Options(kFirst + 259);
  options.stream_commit_rows = 1;  // a commit per block
  options.stream_compact_every_commits = 40;
  options.stream_reorg_window_blocks = 20;
  const auto result = loader::LoadStream(*amp_, kBlocks, config, options);
  ASSERT_TRUE(result.success) << result.error;
  ASSERT_GE(std::stoi(loader::MetadataText(result.metadata.at("compactions"))), 1);
  auto snapshot = Snapshot();
  EXPECT_LT(snapshot->files().size(), 200u);  // compacted: fewer files than commits
  // Compacted files record their microbatches coalesced into spans: a few entries
  // each, however many one-block microbatches they hold.
  int64_t spans = 0;
  int64_t compacted_blocks = 0;
  for (const auto& file : snapshot->files()) {
    auto record = loader::ReadFileRecord(file, loader::StreamAppId(kBlocks));
    ASSERT_OK(record.status());
    EXPECT_FALSE(record->empty()) << file.path;
    spans += static_cast<int64_t>(record->spans.size());
    for (const auto& span : record->spans) {
      compacted_blocks += static_cast<int64_t>(span.size());
    }
  }
  EXPECT_GE(compacted_blocks, 100);
  EXPECT_LT(spans * 10, compacted_blocks);
  // Reorgs after compaction were undone exactly.
  ExpectCanonical(kFirst + 259);
  // A deep reorg reaching into compacted files rewrites them without the invalidated
  // rows (found by block number in a span).
  ASSERT_OK(server_->chain()->Reorg(60));
  ASSERT_OK(server_->AdvanceHead(1));
  results_.clear();
  const auto again = loader::LoadStream(*amp_, kBlocks, config, Options(kFirst + 260));
  ASSERT_TRUE(again.success) << again.error;
  EXPECT_EQ(Reorgs(), 1);
  ExpectCanonical(kFirst + 260);
}

TEST_F(StreamLoadTest, TwoLoadersOnOneStreamOneWinsAndNothingIsDuplicated) {
  StartLive(/*blocks=*/400);
  loader::LoadResult results[2];
  std::thread loaders[2];
  for (int i = 0; i < 2; ++i) {
    loaders[i] = std::thread([&, i] { results[i] = Stream(kFirst + 399); });
  }
  for (auto& thread : loaders) thread.join();
  const int failed = (results[0].success ? 0 : 1) + (results[1].success ? 0 : 1);
  ASSERT_EQ(failed, 1) << results[0].error << " / " << results[1].error;
  const auto& loser = results[0].success ? results[1] : results[0];
  EXPECT_NE(loser.error.find("another loader is writing stream"), std::string::npos)
      << loser.error;
  ExpectCanonical(kFirst + 399);
  if (HasFailure()) {
    for (const auto& r : results_) {
      std::cerr << r.ToString() << " v="
                << (r.metadata.count("table_version")
                        ? loader::MetadataText(r.metadata.at("table_version"))
                        : "")
                << " "
                << (r.metadata.count("block_ranges")
                        ? loader::MetadataText(r.metadata.at("block_ranges"))
                        : "")
                << "\n";
    }
    std::cerr << results[0].error << " | " << results[1].error << "\n";
  }
}

TEST_F(StreamLoadTest, AStreamRefusesRowsAnotherWriterLoadedUnlessToldWhereToContinue) {
  Start({});  // a still chain of 100 blocks
  LoadForeignRows(kFirst + 60);
  const auto version = Snapshot()->version();
  const auto refused = Stream(kFirst + 99);
  ASSERT_FALSE(refused.success);
  EXPECT_NE(refused.error.find("already holds 60 rows"), std::string::npos)
      << refused.error;
  EXPECT_NE(refused.error.find("--takeover after-table-max"), std::string::npos);
  EXPECT_EQ(Snapshot()->version(), version);  // the table is left as it was

  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kAfterTableMax;
  options.stream_reorg_window_blocks = 10;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  EXPECT_EQ(loader::MetadataText(taken.metadata.at("takeover_block")),
            std::to_string(kFirst + 50));
  ExpectEachBlockOnce(kFirst + 99);
  // A restart resumes from the stream's own state, with no takeover option needed.
  ASSERT_OK(server_->AdvanceHead(5));
  const auto resumed = Stream(kFirst + 104);
  ASSERT_TRUE(resumed.success) << resumed.error;
  ExpectEachBlockOnce(kFirst + 104);
}

TEST_F(StreamLoadTest, ATakeoverReplacesForeignBlocksAReorgMadeStaleAndUndoesLaterForks) {
  Start({});
  LoadForeignRows(kFirst + 100);          // all 100 blocks
  ASSERT_OK(server_->chain()->Reorg(3));  // the table's last 3 blocks are stale now
  ASSERT_OK(server_->AdvanceHead(5));
  loader::LoadOptions options = Options(kFirst + 104);
  options.takeover = loader::TakeoverMode::kAfterTableMax;
  options.stream_reorg_window_blocks = 5;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  ExpectEachBlockOnce(kFirst + 104);
  // A fork below the takeover block reaches the other writer's rows: they are undone by
  // block number, and re-loaded once.
  ASSERT_OK(server_->chain()->Reorg(14));
  ASSERT_OK(server_->AdvanceHead(1));
  const auto after = Stream(kFirst + 105);
  ASSERT_TRUE(after.success) << after.error;
  ExpectEachBlockOnce(kFirst + 105);
}

TEST_F(StreamLoadTest, ATakeoverFromAnExplicitBlockReplacesTheRowsFromItOn) {
  Start({});
  LoadForeignRows(kFirst + 100);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kFromBlock;
  options.takeover_block = kFirst + 40;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  ExpectEachBlockOnce(kFirst + 99);
  const auto rows = TableRows();
  // Blocks below the takeover block stay the other writer's rows (no batch id); the
  // stream's cursor is the takeover block itself, which the server sends again.
  EXPECT_TRUE(std::get<2>(rows[38]).empty());
  EXPECT_TRUE(std::get<2>(rows[39]).empty());
  EXPECT_FALSE(std::get<2>(rows[40]).empty());
}

// A table an older ampdelta took over (a legacy record, the block before the takeover
// block kept): the stream resumes before it and replaces the re-sent block, as it did.
TEST_F(StreamLoadTest, ALegacyTakeoverRecordStillReplacesTheBlockBeforeIt) {
  Start({});
  LoadForeignRows(kFirst + 100);
  auto store = *storage::OpenObjectStore(table_);
  // What an older takeover from block 40 committed: foreign rows from 40 on removed,
  // the stream's txn and the legacy record.
  ASSERT_OK(
      delta::DeleteRows(store, "block_num >= " + std::to_string(kFirst + 40)).status());
  const auto app_id = loader::StreamAppId(kBlocks);
  delta::TableWriteOptions record;
  record.app_transaction = delta::SetTransaction{app_id, 1, {}};
  record.transaction_records.push_back(
      delta::SetTransaction{loader::LegacyTakeoverAppId(app_id, "mainnet"),
                            static_cast<int64_t>(kFirst + 40),
                            {}});
  ASSERT_OK_AND_ASSIGN(auto writer,
                       delta::TableWriter::Open(store, Snapshot()->schema(), record));
  ASSERT_OK(writer->Commit().status());
  const auto streamed = Stream(kFirst + 99);
  ASSERT_TRUE(streamed.success) << streamed.error;
  ExpectEachBlockOnce(kFirst + 99);
  const auto rows = TableRows();
  EXPECT_TRUE(std::get<2>(rows[38]).empty());
  EXPECT_FALSE(std::get<2>(rows[39]).empty());  // re-sent and replaced
}

// The seed block the server sends again after a takeover is replaced in the takeover's
// own commit: on a chain that never reorged, no reorg is counted, logged or committed.
TEST_F(StreamLoadTest, ATakeoverOnAQuietChainIsNotAReorg) {
  Start({});
  LoadForeignRows(kFirst + 100);
  const auto before = Snapshot()->version();
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kAfterTableMax;
  options.stream_reorg_window_blocks = 10;
  int reorg_results = 0;
  options.on_result = [&](const loader::LoadResult& result) {
    reorg_results += result.is_reorg ? 1 : 0;
  };
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  EXPECT_EQ(loader::MetadataText(taken.metadata.at("reorgs")), "0");
  EXPECT_EQ(reorg_results, 0);
  ExpectEachBlockOnce(kFirst + 99);
  // The takeover commit and the stream's data: no DELETE for a reorg in between.
  auto store = *storage::OpenObjectStore(table_);
  for (auto version = before + 1; version <= Snapshot()->version(); ++version) {
    for (const auto& info : delta::test_tables::ActionsOf<delta::CommitInfo>(
             delta::test_tables::CommitOf(*store, version))) {
      const auto predicate = info.operation_parameters.find("predicate");
      if (predicate == info.operation_parameters.end()) continue;
      EXPECT_EQ(predicate->second.find("reorg"), std::string::npos) << predicate->second;
    }
  }
}

// delta.setTransactionRetentionDuration ages `txn` records out, but the other writer's
// rows below the takeover block stay: every stream commit records the takeover again, so
// a later reorg reaching below it still finds them by block number.
TEST_F(StreamLoadTest,
       ATakeoverRecordOutlivesTheTransactionRetentionWhileTheStreamCommits) {
  Start({});
  auto expiring = loader::ParseDeltaLakeConfig(
      R"({"table_path": ")" + table_ +
      R"(", "optimize_after_write": false, "table_properties": )"
      R"({"delta.setTransactionRetentionDuration": "interval 1 second"}})");
  ASSERT_OK(expiring.status());
  loader::LoadOptions batch;
  batch.destination = "blocks";
  ASSERT_TRUE(loader::LoadBatch(*amp_,
                                std::string(kBlocks) + " WHERE block_num < " +
                                    std::to_string(kFirst + 100),
                                *expiring, batch)
                  .success);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kAfterTableMax;
  options.stream_reorg_window_blocks = 10;
  ASSERT_TRUE(loader::LoadStream(*amp_, kBlocks, Config(), options).success);
  // Past the retention: a record the stream did not write again would be forgotten. (A
  // retention of a millisecond was shorter than writing one commit file under load: the
  // record the newest commit wrote expired against that commit's own file time.)
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_OK(server_->AdvanceHead(5));
  ASSERT_TRUE(Stream(kFirst + 104).success);
  const auto app_id = loader::StreamAppId(kBlocks);
  ASSERT_EQ(loader::TakeoverBlocks(*Snapshot(), app_id).count("mainnet"), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_OK(server_->chain()->Reorg(20));  // forks below the takeover block
  ASSERT_OK(server_->AdvanceHead(1));
  const auto after = Stream(kFirst + 105);
  ASSERT_TRUE(after.success) << after.error;
  ExpectEachBlockOnce(kFirst + 105);
}

TEST_F(StreamLoadTest, ATakeoverWithoutReorgDetectionStillReplacesTheReSentSeedBlock) {
  Start({});
  LoadForeignRows(kFirst + 100);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kFromBlock;
  options.takeover_block = kFirst + 40;
  options.with_reorg_detection = false;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  ExpectEachBlockOnce(kFirst + 99);
}

TEST_F(StreamLoadTest, ATakeoverFromTheFirstBlockReloadsEverythingWithoutACursor) {
  // A cursor before the dataset's first block would wait for ever (ampd sends nothing).
  Start({});
  LoadForeignRows(kFirst + 100);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kFromBlock;
  options.takeover_block = kFirst;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  ExpectEachBlockOnce(kFirst + 99);
}

TEST_F(StreamLoadTest, ACompactionAfterATakeoverKeepsForeignRowsUndoableByBlock) {
  Start({});
  LoadForeignRows(kFirst + 100);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kFromBlock;
  options.takeover_block = kFirst + 95;
  const auto taken = loader::LoadStream(*amp_, kBlocks, Config(), options);
  ASSERT_TRUE(taken.success) << taken.error;
  // Compaction never merges the other writer's untagged files with the stream's.
  ASSERT_OK(delta::Optimize(*storage::OpenObjectStore(table_)).status());
  ASSERT_OK(server_->chain()->Reorg(14));  // a fork below the takeover block
  ASSERT_OK(server_->AdvanceHead(1));
  const auto after = Stream(kFirst + 100);
  ASSERT_TRUE(after.success) << after.error;
  ExpectEachBlockOnce(kFirst + 100);
}

TEST_F(StreamLoadTest, AnotherQuerysStreamDoesNotTakeOverRowsAStreamAlreadyTookOver) {
  Start({});
  LoadForeignRows(kFirst + 60);
  loader::LoadOptions options = Options(kFirst + 99);
  options.takeover = loader::TakeoverMode::kAfterTableMax;
  options.stream_reorg_window_blocks = 10;
  ASSERT_TRUE(loader::LoadStream(*amp_, kBlocks, Config(), options).success);
  ASSERT_OK(server_->AdvanceHead(5));
  // A second query over later blocks shares the table: nothing of the first is touched.
  const std::string later =
      std::string(kBlocks) + " WHERE block_num >= " + std::to_string(kFirst + 100);
  loader::LoadOptions second = Options(kFirst + 104);
  second.takeover = loader::TakeoverMode::kAfterTableMax;
  const auto shared = loader::LoadStream(*amp_, later, Config(), second);
  ASSERT_TRUE(shared.success) << shared.error;
  ExpectEachBlockOnce(kFirst + 104);
}

TEST_F(StreamLoadTest, AStreamWhoseRowsAnotherWriterReplacedRefusesToLoadThemAgain) {
  Start({});
  ASSERT_TRUE(Stream(kFirst + 49).success);
  loader::LoadOptions batch;
  batch.destination = "blocks";
  batch.mode = loader::LoadMode::kOverwrite;
  ASSERT_TRUE(loader::LoadBatch(*amp_,
                                std::string(kBlocks) + " WHERE block_num < " +
                                    std::to_string(kFirst + 80),
                                Config(), batch)
                  .success);
  const auto again = Stream(kFirst + 99);
  ASSERT_FALSE(again.success);
  EXPECT_NE(again.error.find("already holds 80 rows"), std::string::npos) << again.error;
}

}  // namespace
}  // namespace ampdelta
