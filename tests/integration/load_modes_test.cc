// The deltalake loader's modes and resilience against the in-process dev server: merge
// and upsert, commit_every_rows, per-batch results, retries of transient server failures,
// store failures mid-load, and the seed page's examples.

#include <chrono>
#include <filesystem>
#include <functional>
#include <vector>

#include <arrow/array/builder_primitive.h>
#include <arrow/array/util.h>
#include <arrow/compute/api.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>

#include "ampdelta/amp/server_error.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/backfill/block_replacement.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/client/client.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/status.h"
#include "tests/support/faulty_amp_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

constexpr const char* kQuickstart =
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)";

std::string Blocks(int from, int to) {
  return std::string(
             R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks )") +
         "WHERE block_num >= " + std::to_string(24000000 + from) + " AND block_num < " +
         std::to_string(24000000 + to);
}

class LoadModesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devserver::DevServerOptions options;
    options.chain.transactions_per_block = 8;
    options.chain.max_rows_per_batch = 128;  // several batches per query
    options.stream.batch_rows = 128;
    ASSERT_OK_AND_ASSIGN(server_, devserver::DevServer::Start(options));
    ASSERT_OK_AND_ASSIGN(amp_, amp::Client::Connect(server_->url()));
    table_ = dir_.path() + "/blocks";
  }

  loader::DeltaLakeConfig Config(const std::string& extra = "") {
    auto config = loader::ParseDeltaLakeConfig(R"({"table_path": ")" + table_ +
                                               R"(", "optimize_after_write": false)" +
                                               (extra.empty() ? "" : ", " + extra) + "}");
    EXPECT_OK(config.status());
    return *config;
  }

  loader::LoadResult Load(const std::string& sql, loader::LoadOptions options,
                          const std::string& extra = "") {
    options.destination = "blocks";
    return loader::LoadBatch(*amp_, sql, Config(extra), options);
  }

  loader::LoadResult Load(const std::string& sql,
                          loader::LoadMode mode = loader::LoadMode::kAppend,
                          const std::string& extra = "") {
    loader::LoadOptions options;
    options.mode = mode;
    return Load(sql, options, extra);
  }

  std::shared_ptr<const delta::Snapshot> Snapshot(
      std::optional<int64_t> version = std::nullopt) {
    auto store = *storage::OpenObjectStore(table_);
    delta::SnapshotOptions options;
    options.version = version;
    return *delta::Snapshot::Load(store, options);
  }

  // The table's rows as "block_num:gas_used", sorted.
  std::vector<std::string> Rows(const std::shared_ptr<const delta::Snapshot>& snapshot,
                                const std::string& value_column = "gas_used") {
    auto scan =
        delta::TableScan::Make(snapshot, {{"block_num", value_column}, std::nullopt});
    EXPECT_OK(scan.status());
    auto table = (*scan)->ToTable();
    EXPECT_OK(table.status());
    std::vector<std::string> rows;
    auto combined = *(*table)->CombineChunksToBatch();
    for (int64_t i = 0; i < combined->num_rows(); ++i) {
      rows.push_back((*combined->column(0)->GetScalar(i))->ToString() + ":" +
                     (*combined->column(1)->GetScalar(i))->ToString());
    }
    std::sort(rows.begin(), rows.end());
    return rows;
  }

  ampdelta::testing::TempDir dir_;
  std::unique_ptr<devserver::DevServer> server_;
  std::unique_ptr<amp::Client> amp_;
  std::string table_;
};

TEST_F(LoadModesTest,
       MergeReplacesMatchingRowsInsertsOthersAndReadsOnlyFilesThatMayMatch) {
  // Three files of 30 blocks each.
  ASSERT_TRUE(Load(Blocks(0, 30)).success);
  ASSERT_TRUE(Load(Blocks(30, 60)).success);
  ASSERT_TRUE(Load(Blocks(60, 90)).success);
  const auto before = Rows(Snapshot());
  ASSERT_EQ(before.size(), 90u);

  loader::LoadOptions options;
  options.mode = loader::LoadMode::kMerge;
  options.merge_keys = {"block_num"};
  const auto result = Load(Blocks(80, 100), options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 20);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_updated")), "10");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_inserted")), "10");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("files_rewritten")), "1");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("files_skipped")),
            "2");  // blocks 0-59: key stats exclude them
  EXPECT_EQ(loader::MetadataText(result.metadata.at("table_version")), "3");

  auto snapshot = Snapshot();
  const auto after = Rows(snapshot);
  ASSERT_EQ(after.size(), 100u);  // every block once
  std::set<std::string> distinct_blocks;
  for (const auto& row : after) distinct_blocks.insert(row.substr(0, row.find(':')));
  EXPECT_EQ(distinct_blocks.size(), 100u);
  // The untouched files are the same files.
  int kept = 0;
  const auto previous = Snapshot(2);
  for (const auto& file : previous->files()) {
    for (const auto& now : snapshot->files()) kept += now.path == file.path ? 1 : 0;
  }
  EXPECT_EQ(kept, 2);
  // One commit, named MERGE; the version before stays readable.
  ASSERT_OK_AND_ASSIGN(auto history,
                       delta::ReadHistory(**storage::OpenObjectStore(table_), 1));
  ASSERT_TRUE(history[0].commit_info.has_value());
  EXPECT_EQ(history[0].commit_info->operation, "MERGE");
  EXPECT_EQ(Rows(Snapshot(2)), before);
}

TEST_F(LoadModesTest, UpsertKeepsTheLastRowOfEachKeyInsideTheLoad) {
  loader::LoadOptions options;
  options.mode = loader::LoadMode::kUpsert;
  options.merge_keys = {"block_num"};
  // 8 transactions per block: the last of each block wins.
  const auto result =
      Load(R"(SELECT block_num, tx_index FROM "acme/eth_mainnet".transactions)", options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("source_duplicates")), "700");
  const auto rows = Rows(Snapshot(), "tx_index");
  ASSERT_EQ(rows.size(), 100u);
  for (const auto& row : rows) EXPECT_EQ(row.substr(row.find(':') + 1), "7") << row;
}

TEST_F(LoadModesTest, MergeWithCompositeKeysMatchesOnAllOfThem) {
  const std::string tx =
      R"(SELECT block_num, tx_index, gas_used FROM "acme/eth_mainnet".transactions)";
  ASSERT_TRUE(Load(tx + " WHERE block_num < 24000010").success);
  loader::LoadOptions options;
  options.mode = loader::LoadMode::kMerge;
  options.merge_keys = {"block_num", "tx_index"};
  const auto result =
      Load(tx + " WHERE block_num >= 24000005 AND block_num < 24000020", options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_updated")), "40");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_inserted")), "80");
  EXPECT_EQ(Snapshot()->CountLiveRecords(), std::optional<int64_t>(160));
}

TEST_F(LoadModesTest, MergeErrorsNameTheProblemAndLeaveTheTable) {
  ASSERT_TRUE(Load(kQuickstart).success);
  loader::LoadOptions options;
  options.mode = loader::LoadMode::kMerge;
  auto result = Load(kQuickstart, options);
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("needs merge_keys"), std::string::npos) << result.error;
  options.merge_keys = {"tx_hash"};
  result = Load(kQuickstart, options);
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("merge key column 'tx_hash' not found in the data"),
            std::string::npos)
      << result.error;
  EXPECT_EQ(Snapshot()->version(), 0);
}

TEST_F(LoadModesTest, CommitEveryRowsCommitsInSlicesAndOverwriteReplacesOnlyOnce) {
  ASSERT_TRUE(Load(kQuickstart).success);
  loader::LoadOptions options;
  options.mode = loader::LoadMode::kOverwrite;
  options.commit_every_rows = 200;
  const auto result =
      Load(R"(SELECT block_num, gas_used FROM "acme/eth_mainnet".transactions)", options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 800);
  const int commits = std::stoi(loader::MetadataText(result.metadata.at("commits")));
  EXPECT_GE(commits, 2);
  auto snapshot = Snapshot();
  EXPECT_EQ(snapshot->version(), commits);
  EXPECT_EQ(snapshot->CountLiveRecords(), std::optional<int64_t>(800));
}

TEST_F(LoadModesTest, BatchLoadsReportEachBatchUnlessReadAll) {
  loader::LoadOptions options;
  std::vector<loader::LoadResult> batches;
  options.on_batch = [&](const loader::LoadResult& batch) { batches.push_back(batch); };
  const auto result = Load(R"(SELECT * FROM "acme/eth_mainnet".transactions)", options);
  ASSERT_TRUE(result.success) << result.error;
  ASSERT_GE(batches.size(), 2u);
  int64_t sum = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_TRUE(batches[i].success);
    EXPECT_EQ(loader::MetadataText(batches[i].metadata.at("batch_index")),
              std::to_string(i));
    sum += batches[i].rows_loaded;
    EXPECT_EQ(loader::MetadataText(batches[i].metadata.at("total_rows")),
              std::to_string(sum));
    EXPECT_NE(
        loader::MetadataText(batches[i].metadata.at("block_ranges")).find("mainnet:"),
        std::string::npos);
  }
  EXPECT_EQ(sum, result.rows_loaded);
  batches.clear();
  options.read_all = true;
  ASSERT_TRUE(Load(R"(SELECT * FROM "acme/eth_mainnet".transactions)", options).success);
  EXPECT_TRUE(batches.empty());
}

TEST_F(LoadModesTest, TransientServerFailuresAreRetriedWithoutDuplicatingRows) {
  // The seed's default back-off (2 s, doubling), waited by a recorder: no real sleep.
  const std::string retry = R"("resilience": {"retry": {"jitter": false}})";
  // Planning fails twice, then the stream dies after two messages once: three retries.
  testing::FaultyAmpClient flaky(amp_.get(),
                                 {.failing_queries = 2, .failing_streams = 1});
  loader::LoadOptions options;
  options.destination = "tx";
  std::vector<std::chrono::milliseconds> waited;
  options.sleep = [&](std::chrono::milliseconds delay) { waited.push_back(delay); };
  const auto result = loader::LoadBatch(
      flaky, R"(SELECT block_num, gas_used FROM "acme/eth_mainnet".transactions)",
      Config(retry), options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(flaky.queries, 4);
  EXPECT_EQ(loader::MetadataText(result.metadata.at("retries")), "3");
  EXPECT_EQ(waited, (std::vector<std::chrono::milliseconds>{
                        std::chrono::milliseconds(2000), std::chrono::milliseconds(4000),
                        std::chrono::milliseconds(8000)}));
  EXPECT_EQ(result.rows_loaded, 800);
  auto snapshot = Snapshot();
  EXPECT_EQ(snapshot->version(), 0);
  EXPECT_EQ(snapshot->CountLiveRecords(), std::optional<int64_t>(800));
}

TEST_F(LoadModesTest, RetriesStopAtMaxRetriesAndNonTransientErrorsAreNotRetried) {
  const std::string retry =
      R"("resilience": {"retry": {"max_retries": 2, "initial_backoff_ms": 5}})";
  testing::FaultyAmpClient down(amp_.get(), {.failing_queries = 10});
  auto result = loader::LoadBatch(down, kQuickstart, Config(retry), {});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(down.queries, 3);
  EXPECT_NE(result.error.find("UNAVAILABLE"), std::string::npos) << result.error;

  testing::FaultyAmpClient invalid(amp_.get(),
                                   {.failing_queries = 1, .code = "INVALID_ARGUMENT"});
  result = loader::LoadBatch(invalid, kQuickstart, Config(retry), {});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(invalid.queries, 1);

  testing::FaultyAmpClient disabled(amp_.get(), {.failing_queries = 1});
  result =
      loader::LoadBatch(disabled, kQuickstart,
                        Config(R"("resilience": {"retry": {"enabled": false}})"), {});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(disabled.queries, 1);
  EXPECT_FALSE(storage::OpenObjectStore(table_)
                   .ValueOrDie()
                   ->Head("_delta_log/00000000000000000000.json")
                   .ok());
}

TEST_F(LoadModesTest, AStoreWriteFailingMidLoadCommitsNothingAndLeavesNoFiles) {
  ASSERT_TRUE(
      Load(R"(SELECT * FROM "acme/eth_mainnet".transactions WHERE block_num < 24000010)")
          .success);
  ASSERT_OK_AND_ASSIGN(auto local, storage::OpenObjectStore(table_));
  auto faulty = std::make_shared<storage::FaultStore>(local);
  storage::FaultRule rule;
  rule.op = storage::StoreOp::kOpenOutputStream;
  rule.nth = 2;  // the second data file
  rule.message = "injected: disk full";
  faulty->AddRule(rule);
  loader::LoadOptions options;
  options.store = faulty;
  const auto result = Load(R"(SELECT * FROM "acme/eth_mainnet".transactions)", options,
                           R"("max_rows_per_file": 100)");
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("injected: disk full"), std::string::npos) << result.error;
  EXPECT_EQ(faulty->faults_fired(), 1);
  auto snapshot = Snapshot();
  EXPECT_EQ(snapshot->version(), 0);
  // Only the first load's data file and the log remain.
  ASSERT_OK_AND_ASSIGN(auto listing, local->List("", ""));
  int parquet = 0;
  for (const auto& object : listing) parquet += object.path.ends_with(".parquet") ? 1 : 0;
  EXPECT_EQ(parquet, static_cast<int>(snapshot->files().size()));
}

// Arrow data handed to the engine (the Python package's load_table of a pyarrow table or
// a DataFrame): batches of block_num/gas_used, the last one optionally failing or of
// another schema.
class BatchesReader : public arrow::RecordBatchReader {
 public:
  BatchesReader(std::vector<std::shared_ptr<arrow::RecordBatch>> batches,
                arrow::Status last = arrow::Status::OK())
      : batches_(std::move(batches)), last_(std::move(last)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return batches_[0]->schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    ++reads_;
    if (next_ < batches_.size()) {
      *batch = batches_[next_++];
      return arrow::Status::OK();
    }
    batch->reset();
    return last_;
  }
  int reads() const { return reads_; }

 private:
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches_;
  size_t next_ = 0;
  arrow::Status last_;
  int reads_ = 0;
};

std::shared_ptr<arrow::RecordBatch> BlockGas(int64_t from, int64_t to, int64_t gas) {
  arrow::Int64Builder blocks;
  arrow::Int64Builder gases;
  for (int64_t block = from; block < to; ++block) {
    EXPECT_OK(blocks.Append(block));
    EXPECT_OK(gases.Append(gas));
  }
  auto schema = arrow::schema({arrow::field("block_num", arrow::int64()),
                               arrow::field("gas_used", arrow::int64())});
  return arrow::RecordBatch::Make(schema, to - from, {*blocks.Finish(), *gases.Finish()});
}

loader::LoadResult LoadArrow(std::shared_ptr<arrow::RecordBatchReader> reader,
                             const loader::DeltaLakeConfig& config,
                             loader::LoadMode mode = loader::LoadMode::kAppend,
                             std::vector<std::string> keys = {}) {
  loader::LoadOptions options;
  options.mode = mode;
  options.merge_keys = std::move(keys);
  options.destination = "blocks";
  return loader::LoadRecordBatches(reader, config, options);
}

TEST_F(LoadModesTest, ArrowDataIsLoadedInEveryModeAsOneCommitPerLoad) {
  auto three = [](int64_t gas) {
    return std::make_shared<BatchesReader>(
        std::vector<std::shared_ptr<arrow::RecordBatch>>{
            BlockGas(0, 4, gas), BlockGas(4, 8, gas), BlockGas(8, 10, gas)});
  };
  auto result = LoadArrow(three(1), Config());
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.rows_loaded, 10);
  EXPECT_EQ(Snapshot()->version(), 0);
  ASSERT_TRUE(LoadArrow(three(2), Config()).success);
  EXPECT_EQ(Snapshot()->version(), 1);
  EXPECT_EQ(Rows(Snapshot()).size(), 20u);
  ASSERT_TRUE(LoadArrow(three(3), Config(), loader::LoadMode::kOverwrite).success);
  EXPECT_EQ(Snapshot()->version(), 2);
  auto rows = Rows(Snapshot());
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& row : rows) EXPECT_TRUE(row.ends_with(":3")) << row;
  // Merge on block_num: blocks 8..11 given gas 4, 10 and 11 are new.
  auto merge = std::make_shared<BatchesReader>(
      std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(8, 12, 4)});
  result = LoadArrow(merge, Config(), loader::LoadMode::kMerge, {"block_num"});
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_updated")), "2");
  EXPECT_EQ(loader::MetadataText(result.metadata.at("rows_inserted")), "2");
  rows = Rows(Snapshot());
  EXPECT_EQ(rows.size(), 12u);
  EXPECT_EQ(Snapshot()->version(), 3);
}

TEST_F(LoadModesTest, ArrowDataThatFailsOrChangesSchemaCommitsNothingAndIsNotReread) {
  ASSERT_TRUE(
      LoadArrow(std::make_shared<BatchesReader>(
                    std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(0, 5, 1)}),
                Config())
          .success);
  // A reader that fails after two batches, with retries configured: read once.
  auto failing = std::make_shared<BatchesReader>(
      std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(5, 7, 1),
                                                       BlockGas(7, 9, 1)},
      arrow::Status::IOError("the producer went away"));
  auto result =
      LoadArrow(failing, Config(R"("resilience": {"retry": {"max_retries": 3}})"));
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("the producer went away"), std::string::npos)
      << result.error;
  EXPECT_EQ(failing->reads(), 3);
  // A batch whose schema is not the reader's.
  auto strings =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("block_num", arrow::utf8()),
                                              arrow::field("gas_used", arrow::int64())}),
                               0,
                               {*arrow::MakeArrayOfNull(arrow::utf8(), 0),
                                *arrow::MakeArrayOfNull(arrow::int64(), 0)});
  auto mixed = std::make_shared<BatchesReader>(
      std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(5, 7, 1), strings});
  result = LoadArrow(mixed, Config());
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.error.find("where the stream declared"), std::string::npos)
      << result.error;
  EXPECT_EQ(Snapshot()->version(), 0);
  EXPECT_EQ(Rows(Snapshot()).size(), 5u);
  ASSERT_OK_AND_ASSIGN(auto local, storage::OpenObjectStore(table_));
  ASSERT_OK_AND_ASSIGN(auto listing, local->List("", ""));
  int parquet = 0;
  for (const auto& object : listing) parquet += object.path.ends_with(".parquet") ? 1 : 0;
  EXPECT_EQ(parquet, 1);
  EXPECT_FALSE(LoadArrow(nullptr, Config()).success);
}

TEST_F(LoadModesTest, PartitionsReplacingBlocksOfOneFileRetryOnTheWinnersTable) {
  // A first run left blocks 0..99 in one file (a compaction packs partitions so). Run
  // again, partition 0..49 commits while partition 50..99 is about to: both remove that
  // file, the second conflicts, plans its removal again on the first's table and commits.
  auto once = [](int64_t from, int64_t to, int64_t gas) {
    return std::make_shared<BatchesReader>(
        std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(from, to, gas)});
  };
  ASSERT_TRUE(LoadArrow(once(0, 100, 1), Config()).success);
  ASSERT_OK_AND_ASSIGN(auto local, storage::OpenObjectStore(table_));
  auto faulty = std::make_shared<storage::FaultStore>(local);
  loader::LoadResult first;
  storage::FaultRule rule;
  rule.op = storage::StoreOp::kPut;
  rule.path_contains = "_delta_log/00000000000000000001.json";
  rule.fail = false;
  rule.before = [&] {
    loader::LoadOptions options;
    options.destination = "blocks";
    first = loader::LoadReplacingBlocks(once(0, 50, 2), Config(), options, {0, 49});
  };
  faulty->AddRule(rule);
  loader::LoadOptions options;
  options.destination = "blocks";
  options.store = faulty;
  int sleeps = 0;
  options.sleep = [&sleeps](std::chrono::milliseconds) { ++sleeps; };
  const auto second =
      loader::LoadReplacingBlocks(once(50, 100, 2), Config(), options, {50, 99});
  ASSERT_TRUE(first.success) << first.error;
  ASSERT_TRUE(second.success) << second.error;
  EXPECT_EQ(faulty->faults_fired(), 1);
  EXPECT_EQ(sleeps, 1);  // one conflict, one retry
  auto rows = Rows(Snapshot());
  ASSERT_EQ(rows.size(), 100u);
  for (const auto& row : rows) EXPECT_TRUE(row.ends_with(":2")) << row;
  // No version holds a block twice or misses one.
  for (int64_t version = 0; version <= Snapshot()->version(); ++version) {
    EXPECT_EQ(Rows(Snapshot(version)).size(), 100u) << "version " << version;
  }
  // The conflicted attempt left no data file behind.
  ASSERT_OK_AND_ASSIGN(auto listing, local->List("", ""));
  int parquet = 0;
  for (const auto& object : listing) parquet += object.path.ends_with(".parquet") ? 1 : 0;
  // The first run's, then one per partition (its rows and the rows it kept of the file it
  // replaced in); the removed ones stay for readers of older versions until a vacuum.
  EXPECT_EQ(parquet, 3);
}

TEST_F(LoadModesTest, AReplacingLoadThatCannotReplaceItsBlocksIsRefusedAndWritesNothing) {
  struct Case {
    std::string what;
    loader::BlockSpan blocks;
    int64_t from, to;  // the rows' blocks
    std::function<void(loader::LoadOptions*)> set;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"commit_every_rows",
       {0, 49},
       0,
       50,
       [](loader::LoadOptions* o) { o->commit_every_rows = 10; },
       "commit_every_rows"},
      {"merge",
       {0, 49},
       0,
       50,
       [](loader::LoadOptions* o) {
         o->mode = loader::LoadMode::kMerge;
         o->merge_keys = {"block_num"};
       },
       "mode merge"},
      {"a row past the span",
       {0, 48},
       0,
       50,
       [](loader::LoadOptions*) {},
       "rows of blocks 0..49 lie outside the blocks they replace, 0..48"},
      {"a span past INT64_MAX",
       {0, uint64_t{1} << 63},
       0,
       50,
       [](loader::LoadOptions*) {},
       "no span of block numbers"},
      {"no such block column",
       {0, 49},
       0,
       50,
       [](loader::LoadOptions* o) { o->block_column = "nope"; },
       "no block column 'nope'"},
  };
  for (const auto& c : cases) {
    loader::LoadOptions options;
    options.destination = "blocks";
    c.set(&options);
    const auto result = loader::LoadReplacingBlocks(
        std::make_shared<BatchesReader>(
            std::vector<std::shared_ptr<arrow::RecordBatch>>{BlockGas(c.from, c.to, 2)}),
        Config(), options, c.blocks);
    EXPECT_FALSE(result.success) << c.what;
    EXPECT_NE(result.error.find(c.error), std::string::npos)
        << c.what << ": " << result.error;
    EXPECT_FALSE(std::filesystem::exists(table_)) << c.what;
  }
}

TEST_F(LoadModesTest, SeedReplaceFlowDeletesEveryRowThenAppends) {
  ASSERT_TRUE(Load(kQuickstart).success);
  ASSERT_OK_AND_ASSIGN(auto deleted,
                       delta::DeleteAllRows(*storage::OpenObjectStore(table_)));
  EXPECT_EQ(deleted.rows_deleted, 100);
  EXPECT_EQ(Snapshot()->CountLiveRecords(), std::optional<int64_t>(0));
  ASSERT_TRUE(Load(kQuickstart).success);
  EXPECT_EQ(Snapshot()->version(), 2);
  EXPECT_EQ(Rows(Snapshot()).size(), 100u);
  EXPECT_EQ(Rows(Snapshot(0)), Rows(Snapshot()));  // the previous versions stay readable
}

TEST_F(LoadModesTest, SeedZstdWriterPropertiesCompressEveryColumnChunkWithZstd) {
  loader::LoadOptions options;
  options.compression = "zstd";
  options.compression_level = 9;
  options.read_all = true;
  ASSERT_TRUE(Load(kQuickstart, options).success);
  auto snapshot = Snapshot();
  ASSERT_EQ(snapshot->files().size(), 1u);
  auto reader =
      parquet::ParquetFileReader::OpenFile(table_ + "/" + snapshot->files()[0].path);
  auto metadata = reader->metadata();
  for (int column = 0; column < metadata->num_columns(); ++column) {
    EXPECT_EQ(metadata->RowGroup(0)->ColumnChunk(column)->compression(),
              parquet::Compression::ZSTD);
  }
  options.compression = "brotli9";
  const auto bad = Load(kQuickstart, options);
  EXPECT_FALSE(bad.success);
  EXPECT_NE(bad.error.find("brotli9"), std::string::npos) << bad.error;
}

TEST_F(LoadModesTest, SeedTroubleshootingErrorsLeaveTheTableUnchanged) {
  ASSERT_TRUE(
      Load(kQuickstart, loader::LoadMode::kAppend, R"("partition_by": ["block_num"])")
          .success);
  const auto before = Rows(Snapshot());
  struct Case {
    std::string extra;
    std::string mode;
    std::string message;
  };
  const Case cases[] = {
      {R"("partition_by": ["network"])", "append",
       "Partition columns {'network'} not found in table"},
      {R"("partition_by": ["gas_used"])", "append",
       "Specified table partitioning does not match table partitioning"},
      {R"("merge_schema": false)", "append", "schema mismatch with merge_schema=false"},
      {"", "merge", "needs merge_keys"},
      {"", "sideways", "Invalid save mode provided: sideways"},
  };
  for (const auto& c : cases) {
    const std::string sql =
        c.extra.find("merge_schema") != std::string::npos
            ? R"(SELECT block_num, timestamp, hash, gas_used, nonce FROM "acme/eth_mainnet".blocks)"
            : kQuickstart;
    // A mode no load has is refused when it is named, before any load runs.
    auto mode = loader::ParseLoadMode(c.mode);
    if (!mode.ok()) {
      EXPECT_THAT(mode.status(), testing::StatusHasMessage(c.message));
      continue;
    }
    const auto result = Load(sql, *mode, c.extra);
    EXPECT_FALSE(result.success) << c.message;
    EXPECT_NE(result.error.find(c.message), std::string::npos) << result.error;
    EXPECT_EQ(Snapshot()->version(), 0) << c.message;
  }
  EXPECT_EQ(Rows(Snapshot()), before);
  // merge_schema=false still accepts a load that matches.
  EXPECT_TRUE(
      Load(kQuickstart, loader::LoadMode::kAppend, R"("merge_schema": false)").success);
}

TEST_F(LoadModesTest, MissingCloudCredentialsGiveTheSeedsWarning) {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto config = loader::ParseDeltaLakeConfig(
      R"({"table_path": "s3://my-bucket/amp/blocks", "storage_options": {"AWS_REGION": "us-east-1"}})");
  ASSERT_OK(config.status());
  loader::LoadOptions options;
  options.store = *storage::OpenObjectStore(table_);  // where the rows really go
  const auto result = loader::LoadBatch(*amp_, kQuickstart, *config, options);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(loader::MetadataText(result.metadata.at("warning")),
            "Missing S3 credentials: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']");
}

}  // namespace
}  // namespace ampdelta
