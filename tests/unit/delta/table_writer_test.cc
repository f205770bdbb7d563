#include "ampdelta/delta/write/table_writer.h"

#include <atomic>
#include <thread>

#include <arrow/io/memory.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::Range;
using test_tables::WriteBatches;

class TableWriterTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::ObjectStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(TableWriterTest, CreateThenAppendThenOverwriteKeepsHistory) {
  ASSERT_OK_AND_ASSIGN(auto created,
                       WriteBatches(store_, {Blocks(0, 10), Blocks(10, 20)}));
  EXPECT_EQ(created.commit.version, 0);
  EXPECT_EQ(created.rows, 20);
  ASSERT_OK_AND_ASSIGN(auto appended, WriteBatches(store_, {Blocks(20, 25)}));
  EXPECT_EQ(appended.commit.version, 1);
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  ASSERT_OK_AND_ASSIGN(
      auto replaced,
      WriteBatches(store_, {Blocks(100, 103), Blocks(103, 105)}, overwrite));
  EXPECT_EQ(replaced.commit.version, 2);
  ASSERT_OK_AND_ASSIGN(auto latest, BlockNumbers(store_));
  EXPECT_EQ(latest, Range(100, 105));
  ASSERT_OK_AND_ASSIGN(auto before, BlockNumbers(store_, 1));
  EXPECT_EQ(before, Range(0, 25));
}

TEST_F(TableWriterTest, ErrorAndIgnoreModesRespectAnExistingTable) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}).status());
  TableWriteOptions error;
  error.mode = SaveMode::kErrorIfExists;
  EXPECT_THAT(WriteBatches(store_, {Blocks(3, 4)}, error),
              testing::StatusHasMessage("already exists"));
  TableWriteOptions ignore;
  ignore.mode = SaveMode::kIgnore;
  ASSERT_OK_AND_ASSIGN(auto ignored, WriteBatches(store_, {Blocks(3, 4)}, ignore));
  EXPECT_FALSE(ignored.committed);
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->version(), 0);
}

TEST_F(TableWriterTest, PartitionErrorsUseTheSeedMessagesAndWriteNothing) {
  TableWriteOptions missing;
  missing.partition_by = {"chain"};
  EXPECT_THAT(
      WriteBatches(store_, {Blocks(0, 3)}, missing),
      testing::StatusHasMessage("Partition columns {'chain'} not found in table"));
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("", ""));
  EXPECT_TRUE(listing.empty());
  TableWriteOptions by_network;
  by_network.partition_by = {"network"};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}, by_network).status());
  TableWriteOptions other;
  other.partition_by = {"block_num"};
  EXPECT_THAT(WriteBatches(store_, {Blocks(3, 4)}, other),
              testing::StatusHasMessage(
                  "Specified table partitioning does not match table partitioning"));
}

TEST_F(TableWriterTest, MergeSchemaAddsColumnsOrRefusesDifferences) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 2)}).status());
  auto wider = Blocks(2, 4);
  arrow::Int64Builder extra;
  ASSERT_OK(extra.AppendValues({7, 8}));
  ASSERT_OK_AND_ASSIGN(auto extra_array, extra.Finish());
  ASSERT_OK_AND_ASSIGN(
      wider, wider->AddColumn(2, arrow::field("gas", arrow::int64()), extra_array));
  TableWriteOptions strict;
  strict.merge_schema = false;
  EXPECT_THAT(WriteBatches(store_, {wider}, strict),
              testing::StatusHasMessage("['gas']"));
  ASSERT_OK(WriteBatches(store_, {Blocks(4, 5)}, strict)
                .status());  // matching data still loads
  ASSERT_OK_AND_ASSIGN(auto merged, WriteBatches(store_, {wider}));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->schema()->num_fields(), 3);
  EXPECT_TRUE(snapshot->schema()->field(2)->nullable());
}

TEST_F(TableWriterTest, FailedWriteLeavesNoFilesAndNoCommit) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 2)}).status());
  ASSERT_OK_AND_ASSIGN(auto before, store_->List("", ""));
  arrow::UInt64Builder big;
  ASSERT_OK(big.Append(18446744073709551615ULL));
  arrow::StringBuilder net;
  ASSERT_OK(net.Append("eth"));
  auto bad =
      arrow::RecordBatch::Make(Blocks(0, 1)->schema(), 1, {*big.Finish(), *net.Finish()});
  ASSERT_OK_AND_ASSIGN(auto writer, TableWriter::Open(store_, bad->schema(), {}));
  ASSERT_OK(writer->Write(Blocks(5, 9)));
  // Conversion runs on writer threads: the error surfaces at this write or at the commit.
  arrow::Status status = writer->Write(bad);
  if (status.ok()) status = writer->Commit().status();
  EXPECT_THAT(status, testing::StatusHasMessage("18446744073709551615"));
  ASSERT_OK(writer->Abort());
  ASSERT_OK_AND_ASSIGN(auto after, store_->List("", ""));
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].path, before[i].path);
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->version(), 0);
}

TEST_F(TableWriterTest, FilesRollByRowsAndCarryStatistics) {
  TableWriteOptions options;
  options.files.max_rows_per_file = 4;
  ASSERT_OK_AND_ASSIGN(auto result, WriteBatches(store_, {Blocks(0, 10)}, options));
  EXPECT_EQ(result.files_added, 3);
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->CountLiveRecords(), std::optional<int64_t>(10));
  ASSERT_OK_AND_ASSIGN(auto predicate,
                       Predicate::Parse("block_num >= 8", snapshot->schema()));
  int none = 0;
  for (const auto& file : snapshot->files()) {
    if (predicate.Classify(file, {}) == FileMatch::kNone) ++none;
  }
  EXPECT_EQ(none, 2);
}

TEST_F(TableWriterTest, DeleteRewritesOnlyFilesThatMayMatch) {
  TableWriteOptions options;
  options.files.max_rows_per_file = 5;
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 20)}, options).status());
  ASSERT_OK_AND_ASSIGN(auto deleted,
                       DeleteRows(store_, "block_num >= 7 AND block_num < 15"));
  EXPECT_EQ(deleted.rows_deleted, 8);
  EXPECT_EQ(deleted.files_skipped, 2);  // 0..4 and 15..19 untouched
  EXPECT_EQ(deleted.files_removed, 2);  // 5..9 rewritten, 10..14 removed whole
  EXPECT_EQ(deleted.rows_copied, 2);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  std::vector<int64_t> expected = Range(0, 7);
  for (int64_t i = 15; i < 20; ++i) expected.push_back(i);
  EXPECT_EQ(rows, expected);
  ASSERT_OK_AND_ASSIGN(auto nothing, DeleteRows(store_, "block_num > 1000"));
  EXPECT_FALSE(nothing.version.has_value());
  // A missing predicate never means "everything".
  ASSERT_OK_AND_ASSIGN(auto before, Snapshot::Load(store_));
  for (const char* blank : {"", "   ", "\t\n"}) {
    EXPECT_THAT(DeleteRows(store_, blank),
                testing::StatusHasMessage("predicate is empty"));
  }
  ASSERT_OK_AND_ASSIGN(auto unchanged, Snapshot::Load(store_));
  EXPECT_EQ(unchanged->version(), before->version());
  ASSERT_OK_AND_ASSIGN(auto all, DeleteAllRows(store_));
  EXPECT_EQ(all.rows_deleted, 12);
  ASSERT_OK_AND_ASSIGN(auto empty, BlockNumbers(store_));
  EXPECT_TRUE(empty.empty());
  EXPECT_THAT(DeleteRows(store_, "nope = 1"),
              testing::StatusHasMessage("no column 'nope'"));
}

TEST_F(TableWriterTest, CheckpointsEveryIntervalAndSnapshotsReadThem) {
  TableWriteOptions options;
  options.configuration["delta.checkpointInterval"] = "3";
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(auto result,
                         WriteBatches(store_, {Blocks(i * 10, i * 10 + 10)}, options));
    EXPECT_EQ(result.commit.checkpoint_written, i == 3 || i == 6) << i;
  }
  ASSERT_OK(store_->Head(CheckpointPath(6)).status());
  ASSERT_OK(store_->Head(LastCheckpointPath()).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_TRUE(snapshot->log_segment().checkpoint.has_value());
  EXPECT_EQ(snapshot->log_segment().checkpoint->version, 6);
  EXPECT_EQ(snapshot->log_segment().commits.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 80));
  // Without the commits before the checkpoint the table still loads.
  for (int v = 0; v < 6; ++v) ASSERT_OK(store_->Delete(CommitPath(v)));
  ASSERT_OK_AND_ASSIGN(auto again, BlockNumbers(store_));
  EXPECT_EQ(again, Range(0, 80));
}

TEST_F(TableWriterTest, AStreamsCheckpointsNeitherListTheLogNorReadTheLastCheckpoint) {
  // A stream keeps its snapshot up to date; a checkpoint every few commits must cost the
  // table's state, not a listing of the whole log and a replay of the last checkpoint.
  auto store = std::make_shared<storage::FaultStore>(
      std::make_shared<storage::MemoryStore>("stream-checkpoints"));
  std::atomic<int> checkpoint_reads{0};
  for (auto op : {storage::StoreOp::kGet, storage::StoreOp::kOpenInputFile}) {
    storage::FaultRule rule;
    rule.op = op;
    rule.path_contains = ".checkpoint.parquet";
    rule.nth = 0;
    rule.fail = false;
    rule.before = [&] { ++checkpoint_reads; };
    store->AddRule(rule);
  }
  TableWriteOptions options;
  options.configuration["delta.checkpointInterval"] = "2";
  ASSERT_OK(WriteBatches(store, {Blocks(0, 10)}, options).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
  int checkpoints = 0;
  for (int i = 1; i <= 7; ++i) {
    options.read_snapshot = snapshot;
    const int64_t lists = store->calls(storage::StoreOp::kList);
    ASSERT_OK_AND_ASSIGN(auto result,
                         WriteBatches(store, {Blocks(i * 10, i * 10 + 10)}, options));
    ASSERT_EQ(result.commit.checkpoint_written, i % 2 == 0) << i;
    // The first checkpoint of the process may look for expired log files once.
    if (result.commit.checkpoint_written && ++checkpoints > 1) {
      EXPECT_EQ(store->calls(storage::StoreOp::kList), lists) << i;
    }
    ASSERT_OK_AND_ASSIGN(snapshot, snapshot->Update());
    // The checkpoint's snapshot is handed back, so a stream need not replay the commit.
    if (result.commit.checkpoint_written) {
      const auto& after = result.commit.snapshot_after;
      ASSERT_NE(after, nullptr) << i;
      EXPECT_EQ(after->version(), result.commit.version);
      EXPECT_EQ(after->files(), snapshot->files()) << i;
    } else {
      EXPECT_EQ(result.commit.snapshot_after, nullptr) << i;
    }
  }
  EXPECT_EQ(checkpoint_reads.load(), 0);
  // The checkpoints hold the whole table: without the commits before the last one, it
  // still loads every row.
  for (int v = 0; v < 6; ++v) ASSERT_OK(store->Delete(CommitPath(v)));
  ASSERT_OK_AND_ASSIGN(auto reloaded, Snapshot::Load(store));
  ASSERT_TRUE(reloaded->log_segment().checkpoint.has_value());
  EXPECT_EQ(reloaded->log_segment().checkpoint->version, 6);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store));
  EXPECT_EQ(rows, Range(0, 80));
}

TEST_F(TableWriterTest, ParallelFileWritersKeepEveryRowOnce) {
  TableWriteOptions options;
  options.files.num_threads = 3;
  options.files.parallel_threshold_bytes = 0;
  options.partition_by = {"network"};
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int i = 0; i < 30; ++i) {
    batches.push_back(Blocks(i * 100, i * 100 + 100, i % 2 == 0 ? "eth" : "base"));
  }
  ASSERT_OK_AND_ASSIGN(auto result, WriteBatches(store_, batches, options));
  EXPECT_EQ(result.rows, 3000);
  EXPECT_GE(result.files_added, 3);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 3000));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->CountLiveRecords(), std::optional<int64_t>(3000));
}

TEST_F(TableWriterTest, MostlyDistinctColumnsAreWrittenWithoutDictionary) {
  // block_num repeats (10 rows a block); the id column is unique like a transaction hash.
  arrow::Int64Builder blocks;
  arrow::StringBuilder ids;
  for (int i = 0; i < 2000; ++i) {
    ASSERT_OK(blocks.Append(i / 10));
    ASSERT_OK(ids.Append("0x" + std::to_string(1'000'000'007LL * i)));
  }
  auto schema = arrow::schema(
      {arrow::field("block", arrow::int64()), arrow::field("id", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 2000, {*blocks.Finish(), *ids.Finish()});
  ASSERT_OK(WriteBatches(store_, {batch}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_EQ(snapshot->files().size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto input,
                       store_->OpenInputFile(DecodeLogPath(snapshot->files()[0].path)));
  ASSERT_OK_AND_ASSIGN(auto reader,
                       parquet::arrow::OpenFile(input, arrow::default_memory_pool()));
  auto row_group = reader->parquet_reader()->metadata()->RowGroup(0);
  EXPECT_TRUE(row_group->ColumnChunk(0)->has_dictionary_page());
  EXPECT_FALSE(row_group->ColumnChunk(1)->has_dictionary_page());
}

TEST(TableWriterConcurrencyTest, ConcurrentAppendsAllLandExactlyOnce) {
  ampdelta::testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path() + "/t"));
  std::shared_ptr<storage::ObjectStore> store = local;
  constexpr int kWriters = 6;
  std::vector<std::thread> threads;
  std::vector<arrow::Status> statuses(kWriters);
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      statuses[i] = WriteBatches(store, {Blocks(i * 100, i * 100 + 50)}).status();
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& status : statuses) EXPECT_OK(status);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store));
  std::vector<int64_t> expected;
  for (int i = 0; i < kWriters; ++i) {
    for (int64_t n = i * 100; n < i * 100 + 50; ++n) expected.push_back(n);
  }
  EXPECT_EQ(rows, expected);
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
  EXPECT_EQ(snapshot->version(), kWriters - 1);
}

// The row groups of every file of the table, by file.
std::vector<int> RowGroupsPerFile(const std::shared_ptr<storage::ObjectStore>& store) {
  std::vector<int> out;
  auto snapshot = *Snapshot::Load(store);
  for (const auto& file : snapshot->files()) {
    auto data = *store->Get(snapshot->FileKey(file.path));
    auto reader = parquet::ParquetFileReader::Open(
        std::make_shared<arrow::io::BufferReader>(std::move(data)));
    out.push_back(reader->metadata()->num_row_groups());
  }
  return out;
}

TEST(WriterMemoryBudgetTest, RowGroupsOfManyOpenPartitionsAreFlushedToStayWithinIt) {
  // Eight partitions open at once, their rows interleaved: each file's row group grows
  // until the budget, shared by them all, makes the writer flush the largest.
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int round = 0; round < 40; ++round) {
    for (int partition = 0; partition < 8; ++partition) {
      batches.push_back(Blocks(0, 4000, "net" + std::to_string(partition)));
    }
  }
  const auto write = [&](int64_t budget) {
    auto store = std::make_shared<storage::MemoryStore>();
    TableWriteOptions options;
    options.partition_by = {"network"};
    options.files.num_threads = 1;
    options.files.memory_budget_bytes = budget;
    EXPECT_OK(WriteBatches(store, batches, options).status());
    return RowGroupsPerFile(store);
  };
  const auto roomy = write(int64_t{1} << 30);
  ASSERT_EQ(roomy.size(), 8u);
  for (int groups : roomy) EXPECT_EQ(groups, 1);
  const auto tight = write(int64_t{1} << 20);
  ASSERT_EQ(tight.size(), 8u);
  for (int groups : tight) EXPECT_GE(groups, 2) << "1 MiB over 8 files of ~1.3 MiB each";
}

}  // namespace
}  // namespace ampdelta::delta
