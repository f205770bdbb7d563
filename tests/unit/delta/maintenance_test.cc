#include <algorithm>
#include <thread>

#include <arrow/buffer.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/storage/memory_store.h"
#include "ampdelta/util/clock.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::Range;
using test_tables::WriteBatches;

class MaintenanceTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(MaintenanceTest, OptimizePacksSmallFilesWithoutChangingData) {
  TableWriteOptions by_network;
  by_network.partition_by = {"network"};
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 10, i * 10 + 10, i % 2 ? "eth" : "base")},
                           by_network)
                  .status());
  }
  ASSERT_OK_AND_ASSIGN(auto before, Snapshot::Load(store_));
  EXPECT_EQ(before->files().size(), 6u);
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_));
  ASSERT_TRUE(result.version.has_value());
  EXPECT_EQ(result.files_removed, 6);
  EXPECT_EQ(result.files_added, 2);  // one per partition
  EXPECT_EQ(result.partitions_optimized, 2);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 60));
  ASSERT_OK_AND_ASSIGN(auto commit, store_->Get(CommitPath(*result.version)));
  EXPECT_EQ(commit->ToString().find("\"dataChange\":true"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(auto again, Optimize(store_));
  EXPECT_FALSE(again.version.has_value());
}

TEST_F(MaintenanceTest, OptimizeStitchesFilesOfLargeRowGroupsWithMergedStatistics) {
  // Four files of 40,000 rows, one row group each: copied, not rewritten.
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 40000, (i + 1) * 40000)}).status());
  }
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_));
  ASSERT_TRUE(result.version.has_value());
  EXPECT_EQ(result.files_removed, 4);
  EXPECT_EQ(result.files_stitched, 4);
  EXPECT_EQ(result.files_added, 1);
  EXPECT_EQ(result.rows, 160000);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 160000));
  ASSERT_OK_AND_ASSIGN(auto after, Snapshot::Load(store_));
  ASSERT_EQ(after->files().size(), 1u);
  const Add& stitched = after->files().front();
  EXPECT_NE(stitched.path.find(".zstd.parquet"), std::string::npos) << stitched.path;
  const auto stats = nlohmann::json::parse(*stitched.stats);
  EXPECT_EQ(stats["numRecords"], 160000);
  EXPECT_EQ(stats["minValues"]["block_num"], 0);
  EXPECT_EQ(stats["maxValues"]["block_num"], 159999);
  EXPECT_EQ(stats["nullCount"]["network"], 0);
  ASSERT_OK_AND_ASSIGN(auto size, store_->Head(after->FileKey(stitched.path)));
  EXPECT_EQ(size.size, stitched.size);
}

TEST_F(MaintenanceTest, OptimizeOrderedByAColumnPacksEachFileWithOneRunOfIt) {
  // Files committed out of block order, packed two to a bin.
  for (int start : {300, 0, 200, 100}) {
    ASSERT_OK(WriteBatches(store_, {Blocks(start, start + 100)}).status());
  }
  ASSERT_OK_AND_ASSIGN(auto before, Snapshot::Load(store_));
  int64_t largest = 0;
  for (const auto& add : before->files()) largest = std::max(largest, add.size);
  OptimizeOptions options;
  options.target_size = 2 * largest + 1;
  options.order_by = "block_num";
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(before, options));
  EXPECT_EQ(result.files_added, 2);
  ASSERT_OK_AND_ASSIGN(auto after, Snapshot::Load(store_));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const auto& add : after->files()) {
    const auto stats = nlohmann::json::parse(*add.stats);
    ranges.emplace_back(stats["minValues"]["block_num"], stats["maxValues"]["block_num"]);
  }
  std::sort(ranges.begin(), ranges.end());
  const std::vector<std::pair<int64_t, int64_t>> runs = {{0, 199}, {200, 399}};
  EXPECT_EQ(ranges, runs);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 400));
}

TEST_F(MaintenanceTest, OptimizeRewritesFilesOfSmallRowGroups) {
  for (int i = 0; i < 4; ++i)
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 100, (i + 1) * 100)}).status());
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_));
  EXPECT_EQ(result.files_removed, 4);
  EXPECT_EQ(result.files_stitched, 0);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 400));
}

TEST_F(MaintenanceTest, OptimizeAskedForAnotherCodecRewritesEvenLargeRowGroups) {
  TableWriteOptions snappy;
  snappy.files.codec = Codec::kSnappy;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(
        WriteBatches(store_, {Blocks(i * 40000, (i + 1) * 40000)}, snappy).status());
  }
  OptimizeOptions zstd;
  zstd.files.codec = Codec::kZstd;
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_, zstd));
  EXPECT_EQ(result.files_removed, 2);
  EXPECT_EQ(result.files_stitched, 0);
  ASSERT_OK_AND_ASSIGN(auto after, Snapshot::Load(store_));
  EXPECT_NE(after->files().front().path.find(".zstd.parquet"), std::string::npos);
}

TEST_F(MaintenanceTest, OptimizeCompressesUncompressedFilesRatherThanStitchThem) {
  TableWriteOptions uncompressed;
  uncompressed.files.codec = Codec::kUncompressed;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 40000, (i + 1) * 40000)}, uncompressed)
                  .status());
  }
  OptimizeOptions zstd;
  zstd.files.codec = Codec::kZstd;
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_, zstd));
  EXPECT_EQ(result.files_removed, 2);
  EXPECT_EQ(result.files_stitched, 0);
}

TEST_F(MaintenanceTest, OptimizePurgingDeletedRowsRewritesEvenLargeRowGroups) {
  TableWriteOptions dv;
  dv.configuration["delta.enableDeletionVectors"] = "true";
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 40000)}, dv).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(40000, 80000)}).status());
  ASSERT_OK_AND_ASSIGN(auto deleted, DeleteRows(store_, "block_num < 10"));
  ASSERT_EQ(deleted.rows_deleted, 10);
  ASSERT_OK_AND_ASSIGN(auto result, Optimize(store_));
  EXPECT_EQ(result.files_stitched, 0);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(10, 80000));
}

TEST_F(MaintenanceTest, AnOptimizeThatFailsHalfwayThroughABinLeavesNoFileBehind) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 10, i * 10 + 10)}).status());
  }
  ASSERT_OK_AND_ASSIGN(auto before, Snapshot::Load(store_));
  ASSERT_EQ(before->files().size(), 3u);
  // The last file is unreadable: the bin's writer has written the rows of the first two
  // (into files of 5 rows) when reading it fails.
  const std::string last = before->FileKey(before->files()[2].path);
  ASSERT_OK(store_->Put(last, arrow::Buffer::FromString("not parquet"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto objects_before, store_->List("", ""));
  OptimizeOptions options;
  options.stitch_min_rows_per_group = 0;
  options.files.max_rows_per_file = 5;
  EXPECT_FALSE(Optimize(store_, options).ok());
  ASSERT_OK_AND_ASSIGN(auto latest, Snapshot::Load(store_));
  EXPECT_EQ(latest->version(), before->version());
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("", ""));
  std::vector<std::string> parquet_before;
  std::vector<std::string> parquet_after;
  for (const auto& object : objects_before) {
    if (object.path.ends_with(".parquet")) parquet_before.push_back(object.path);
  }
  for (const auto& object : objects) {
    if (object.path.ends_with(".parquet")) parquet_after.push_back(object.path);
  }
  EXPECT_EQ(parquet_after, parquet_before);
}

TEST_F(MaintenanceTest, CompactionCommitsDoNotConflictWithConcurrentAppends) {
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(WriteBatches(store_, {Blocks(i * 10, i * 10 + 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto read, Snapshot::Load(store_));
  // A compaction staged against `read` (as Optimize stages it) ...
  Transaction compaction(store_, read);
  compaction.SetDataChange(false);
  std::vector<Remove> removes;
  std::vector<std::string> keys;
  for (const auto& add : read->files()) {
    Remove remove;
    remove.path = add.path;
    removes.push_back(remove);
    keys.push_back(read->FileKey(add.path));
  }
  compaction.ReadFiles(keys);
  compaction.RemoveFiles(removes);
  Add packed;
  packed.path = "packed.parquet";
  packed.size = 1;
  compaction.AddFiles({packed});
  // ... loses the race to an append and still commits at the next version.
  ASSERT_OK(WriteBatches(store_, {Blocks(100, 101)}).status());
  ASSERT_OK_AND_ASSIGN(auto committed, compaction.Commit());
  EXPECT_EQ(committed.version, 4);
  EXPECT_EQ(committed.attempts, 2);
  ASSERT_OK_AND_ASSIGN(auto latest, Snapshot::Load(store_));
  EXPECT_EQ(latest->files().size(), 2u);  // the packed file and the concurrent append
}

TEST_F(MaintenanceTest, VacuumDeletesOnlyExpiredUnreferencedFiles) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}).status());
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 20)}, overwrite).status());
  // The default retention (7 days) keeps the file version 0 reads.
  ASSERT_OK_AND_ASSIGN(auto kept, Vacuum(store_));
  EXPECT_TRUE(kept.files.empty());
  EXPECT_THAT(Vacuum(store_, {0.0, false, true, false}),
              testing::StatusHasMessage("shorter than"));
  ASSERT_OK_AND_ASSIGN(auto dry, Vacuum(store_, {0.0, true, false, false}));
  ASSERT_EQ(dry.files.size(), 1u);
  EXPECT_OK(store_->Head(dry.files.front()).status());
  ASSERT_OK_AND_ASSIGN(auto done, Vacuum(store_, {0.0, false, false, false}));
  ASSERT_EQ(done.files.size(), 1u);
  EXPECT_THAT(store_->Head(done.files.front()),
              testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(10, 20));
  ASSERT_OK_AND_ASSIGN(auto history, ReadHistory(*store_, 2));
  EXPECT_EQ(history[0].commit_info->operation, "VACUUM END");
  EXPECT_EQ(history[1].commit_info->operation, "VACUUM START");
}

TEST_F(MaintenanceTest, FullVacuumRemovesFilesTheLogNeverMentioned) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}).status());
  ASSERT_OK(store_->Put("part-orphan.parquet", arrow::Buffer::FromString("x"),
                        storage::PutMode::kOverwrite));
  // A vacuum deletes what is strictly older than its retention (0 h here): let the clock
  // pass the orphan's millisecond, or the same-millisecond run keeps it (1 run in ~35).
  ASSERT_OK_AND_ASSIGN(auto orphan, store_->Head("part-orphan.parquet"));
  while (NowMs() <= orphan.last_modified_ms) std::this_thread::yield();
  ASSERT_OK_AND_ASSIGN(auto lite, Vacuum(store_, {0.0, true, false, false}));
  EXPECT_TRUE(lite.files.empty());
  ASSERT_OK_AND_ASSIGN(auto full, Vacuum(store_, {0.0, false, false, true}));
  ASSERT_EQ(full.files, std::vector<std::string>{"part-orphan.parquet"});
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 10));
}

TEST_F(MaintenanceTest, RestoreBringsBackAnOlderVersion) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 15)}).status());
  ASSERT_OK(DeleteRows(store_, "block_num < 5").status());
  ASSERT_OK_AND_ASSIGN(auto restored, Restore(store_, 1));
  EXPECT_EQ(restored.version, 3);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 15));
  ASSERT_OK_AND_ASSIGN(auto deleted, BlockNumbers(store_, 2));
  EXPECT_EQ(deleted, Range(5, 15));
}

}  // namespace
}  // namespace ampdelta::delta
