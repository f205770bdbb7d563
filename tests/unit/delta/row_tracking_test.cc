#include "ampdelta/delta/log/row_tracking.h"

#include <map>
#include <utility>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::ActionsOf;
using test_tables::Blocks;
using test_tables::CommitOf;
using test_tables::WriteBatches;

// block_num -> (stable row ID, stable row commit version) of every live row.
using StableIds = std::map<int64_t, std::pair<int64_t, int64_t>>;

StableIds ReadStableIds(const std::shared_ptr<storage::ObjectStore>& store) {
  auto snapshot = *Snapshot::Load(store);
  auto columns =
      **MaterializedColumns(snapshot->metadata().configuration, *snapshot->schema());
  StableIds out;
  for (const auto& file : snapshot->files()) {
    auto rows = *(*ReadDataFileWithRowIds(*snapshot, file))->CombineChunksToBatch();
    const auto& blocks =
        static_cast<const arrow::Int64Array&>(*rows->GetColumnByName("block_num"));
    const auto& ids =
        static_cast<const arrow::Int64Array&>(*rows->GetColumnByName(columns.row_id));
    const auto& versions = static_cast<const arrow::Int64Array&>(
        *rows->GetColumnByName(columns.row_commit_version));
    for (int64_t row = 0; row < rows->num_rows(); ++row) {
      out[blocks.Value(row)] = {ids.Value(row), versions.Value(row)};
    }
  }
  return out;
}

int64_t HighWaterMark(const std::shared_ptr<storage::ObjectStore>& store) {
  return *RowIdHighWaterMark((*Snapshot::Load(store))->domain_metadata());
}

class RowTrackingTest : public ::testing::Test {
 protected:
  // A table that tracks rows, written in three commits: blocks 0-2, 3-4, 5-9.
  void SetUp() override {
    TableWriteOptions create;
    create.configuration = {{kEnableRowTrackingKey, "true"}};
    ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}, create).status());
    ASSERT_OK(WriteBatches(store_, {Blocks(3, 5)}).status());
    ASSERT_OK(WriteBatches(store_, {Blocks(5, 10)}).status());
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(RowTrackingTest, EveryFileGetsFreshRowIdsAboveTheHighWaterMarkAsItCommits) {
  auto snapshot = *Snapshot::Load(store_);
  EXPECT_TRUE(HasWriterFeature(snapshot->protocol(), TableFeature::kRowTracking));
  EXPECT_TRUE(HasWriterFeature(snapshot->protocol(), TableFeature::kDomainMetadata));
  const auto columns =
      **MaterializedColumns(snapshot->metadata().configuration, *snapshot->schema());
  EXPECT_EQ(columns.row_id.rfind("_row-id-col-", 0), 0u) << columns.row_id;
  EXPECT_EQ(columns.row_commit_version.rfind("_row-commit-version-col-", 0), 0u);
  const auto second = ActionsOf<Add>(CommitOf(*store_, 1));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].base_row_id, 3);
  EXPECT_EQ(second[0].default_row_commit_version, 1);
  const auto domains = ActionsOf<DomainMetadata>(CommitOf(*store_, 1));
  ASSERT_EQ(domains.size(), 1u);
  EXPECT_EQ(domains[0].configuration,
            R"({"domainName":"delta.rowTracking","rowIdHighWaterMark":4})");
  EXPECT_EQ(HighWaterMark(store_), 9);
  StableIds expected;
  for (int64_t block = 0; block < 10; ++block) {
    expected[block] = {block, block < 3 ? 0 : block < 5 ? 1 : 2};
  }
  EXPECT_EQ(ReadStableIds(store_), expected);
}

TEST_F(RowTrackingTest, ACommitThatLostARaceTakesRowIdsAboveTheWinners) {
  auto read = *Snapshot::Load(store_);
  const auto file = [&](const std::string& path, int64_t rows) {
    Add add;
    add.path = path;
    add.size = 1;
    add.stats = R"({"numRecords":)" + std::to_string(rows) + "}";
    return add;
  };
  Transaction winner(store_, read);
  winner.AddFiles({file("winner.parquet", 4)});
  Transaction loser(store_, read);
  loser.AddFiles({file("loser.parquet", 2)});
  ASSERT_OK(winner.Commit().status());
  ASSERT_OK_AND_ASSIGN(auto report, loser.Commit());
  EXPECT_EQ(report.attempts, 2);
  const auto added = ActionsOf<Add>(CommitOf(*store_, report.version));
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].base_row_id, 14);  // the winner took 10-13
  EXPECT_EQ(added[0].default_row_commit_version, report.version);
  EXPECT_EQ(HighWaterMark(store_), 15);
}

TEST_F(RowTrackingTest, OptimizeDeleteAndMergeKeepTheRowIdsOfTheRowsTheyRewrite) {
  StableIds expected = ReadStableIds(store_);
  ASSERT_OK_AND_ASSIGN(auto optimized, Optimize(store_, OptimizeOptions{}));
  ASSERT_TRUE(optimized.version);
  EXPECT_EQ(ReadStableIds(store_), expected);
  // The compacted file took fresh IDs of its own, above every earlier one.
  EXPECT_EQ(HighWaterMark(store_), 19);

  ASSERT_OK(DeleteRows(store_, "block_num = 4").status());
  expected.erase(4);
  EXPECT_EQ(ReadStableIds(store_), expected);
  for (const auto& remove : ActionsOf<Remove>(CommitOf(*store_, 4))) {
    EXPECT_TRUE(remove.base_row_id) << "a remove names the row IDs its add gave";
  }

  // Block 7 is updated: its ID stays, its commit version is the merge's; block 20 is new.
  MergeOptions merge;
  merge.keys = {"block_num"};
  auto source = arrow::ConcatenateRecordBatches({Blocks(7, 8), Blocks(20, 21)});
  ASSERT_OK(source.status());
  ASSERT_OK_AND_ASSIGN(auto merged,
                       MergeRows(store_, (*source)->schema(), {*source}, merge));
  const int64_t version = merged.write.commit.version;
  expected[7].second = version;
  const StableIds after = ReadStableIds(store_);
  ASSERT_EQ(after.count(20), 1u);
  EXPECT_GT(after.at(20).first, 19) << "a new row's ID is fresh";
  EXPECT_EQ(after.at(20).second, version);
  StableIds kept = after;
  kept.erase(20);
  EXPECT_EQ(kept, expected);
}

TEST_F(RowTrackingTest, RestoreBringsBackTheRowsIdsButNeverLowersTheHighWaterMark) {
  const StableIds at_two = ReadStableIds(store_);
  ASSERT_OK(DeleteAllRows(store_).status());
  ASSERT_OK(Restore(store_, 2).status());
  EXPECT_EQ(ReadStableIds(store_), at_two);
  EXPECT_EQ(HighWaterMark(store_), 9);
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 11)}).status());
  EXPECT_EQ(ReadStableIds(store_).at(10).first, 10);
}

TEST_F(RowTrackingTest, SwitchingItOnForATableWithRowsIsRefusedAndTheTableKept) {
  auto plain = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(plain, {Blocks(0, 3)}).status());
  TableWriteOptions enable;
  enable.configuration = {{kEnableRowTrackingKey, "true"}};
  auto refused = WriteBatches(plain, {Blocks(3, 4)}, enable);
  EXPECT_TRUE(IsError(refused.status(), ErrorCode::kInvalidInput));
  EXPECT_THAT(refused.status(), testing::StatusHasMessage("does not backfill"));
  EXPECT_EQ((*Snapshot::Load(plain))->version(), 0);
}

TEST_F(RowTrackingTest, AColumnNamedLikeTheMaterializedOnesIsRefused) {
  auto snapshot = *Snapshot::Load(store_);
  const auto columns =
      **MaterializedColumns(snapshot->metadata().configuration, *snapshot->schema());
  auto batch = Blocks(10, 11);
  auto clashing = *batch->AddColumn(2, arrow::field(columns.row_id, arrow::int64()),
                                    *arrow::MakeArrayOfNull(arrow::int64(), 1));
  auto refused = WriteBatches(store_, {clashing});
  EXPECT_TRUE(IsError(refused.status(), ErrorCode::kInvalidInput));
  EXPECT_THAT(refused.status(), testing::StatusHasMessage(columns.row_id));
  EXPECT_EQ((*Snapshot::Load(store_))->version(), 2);
}

TEST_F(RowTrackingTest, TurningItOnLosesToAConcurrentAppendWithoutRowIds) {
  auto plain = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(plain, {Blocks(0, 3)}).status());
  ASSERT_OK(DeleteAllRows(plain).status());  // empty: row tracking may start
  TableWriteOptions enable;
  enable.configuration = {{kEnableRowTrackingKey, "true"}};
  ASSERT_OK_AND_ASSIGN(auto starting,
                       TableWriter::Open(plain, Blocks(0, 1)->schema(), enable));
  ASSERT_OK(starting->Write(Blocks(10, 12)));
  ASSERT_OK(WriteBatches(plain, {Blocks(3, 4)}).status());  // lands first, without IDs
  EXPECT_TRUE(IsError(starting->Commit().status(), ErrorCode::kCommitConflict));
  auto snapshot = *Snapshot::Load(plain);
  EXPECT_FALSE(RowTrackingEnabled(snapshot->metadata().configuration));
}

TEST_F(RowTrackingTest, WritersCreatingTheSameTableAtOnceAllCommitWithDistinctIds) {
  auto fresh = std::make_shared<storage::MemoryStore>();
  TableWriteOptions create;
  create.configuration = {{kEnableRowTrackingKey, "true"}};
  create.expect_new_table = false;
  ASSERT_OK_AND_ASSIGN(auto first,
                       TableWriter::Open(fresh, Blocks(0, 1)->schema(), create));
  ASSERT_OK_AND_ASSIGN(auto second,
                       TableWriter::Open(fresh, Blocks(0, 1)->schema(), create));
  ASSERT_OK(first->Write(Blocks(0, 3)));
  ASSERT_OK(second->Write(Blocks(3, 5)));
  ASSERT_OK(first->Commit().status());
  ASSERT_OK(second->Commit().status());  // joins the table the first created
  StableIds expected;
  for (int64_t block = 0; block < 5; ++block)
    expected[block] = {block, block < 3 ? 0 : 1};
  EXPECT_EQ(ReadStableIds(fresh), expected);
}

TEST_F(RowTrackingTest, IdsPastTheRangeOfALongAreRefusedNotWrapped) {
  Transaction mark(store_, *Snapshot::Load(store_));
  mark.SetDomainMetadata(RowIdHighWaterMarkDomain(INT64_MAX - 3));
  ASSERT_OK(mark.Commit().status());
  auto refused = WriteBatches(store_, {Blocks(10, 15)});
  EXPECT_TRUE(IsError(refused.status(), ErrorCode::kInvalidInput));
  EXPECT_THAT(refused.status(), testing::StatusHasMessage("range of a long"));
  EXPECT_EQ((*Snapshot::Load(store_))->version(), 3);
}

TEST_F(RowTrackingTest, FilesWrittenWhileSparkSuspendsItGetNoRowIds) {
  auto snapshot = *Snapshot::Load(store_);
  Metadata metadata = snapshot->metadata();
  metadata.configuration[kEnableRowTrackingKey] = "false";
  metadata.configuration["delta.rowTrackingSuspended"] = "true";
  Transaction suspend(store_, snapshot);
  suspend.SetMetadata(metadata);
  ASSERT_OK(suspend.Commit().status());
  ASSERT_OK_AND_ASSIGN(auto written, WriteBatches(store_, {Blocks(10, 12)}));
  const auto added = ActionsOf<Add>(CommitOf(*store_, written.commit.version));
  ASSERT_EQ(added.size(), 1u);
  EXPECT_FALSE(added[0].base_row_id);
  EXPECT_EQ(HighWaterMark(store_), 9);
}

TEST(RowTrackingDomainTest, AHighWaterMarkThatDoesNotParseIsACorruptLog) {
  for (const char* config : {"{}", R"({"rowIdHighWaterMark":"x"})", "nonsense",
                             R"({"rowIdHighWaterMark":-5})"}) {
    const auto mark = RowIdHighWaterMarkIn(DomainMetadata{kRowTrackingDomain, config});
    EXPECT_TRUE(IsError(mark.status(), ErrorCode::kCorruptLog)) << config;
  }
  EXPECT_EQ(*RowIdHighWaterMarkIn(DomainMetadata{"delta.clustering", "{}"}),
            std::nullopt);
  EXPECT_EQ(*RowIdHighWaterMarkIn(RowIdHighWaterMarkDomain(41)), 41);
}

TEST(TypeWideningPreviewTest, TypeChangesWithoutAVersionTakeTheCommits) {
  const std::string schema =
      R"({"type":"struct","fields":[{"name":"id","type":"long","nullable":true,)"
      R"("metadata":{"delta.typeChanges":[{"toType":"long","fromType":"integer",)"
      R"("tableVersion":2}]}},{"name":"s","type":{"type":"struct","fields":[{"name":)"
      R"("a","type":"long","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":)"
      R"("integer","toType":"long"}]}}]},"nullable":true,"metadata":{}}]})";
  ASSERT_OK_AND_ASSIGN(auto stamped, StampTypeChangeVersions(schema, 7));
  EXPECT_NE(stamped.find(R"("tableVersion":2)"), std::string::npos) << stamped;
  EXPECT_NE(stamped.find(R"({"fromType":"integer","toType":"long","tableVersion":7})"),
            std::string::npos)
      << stamped;
  // Nothing to stamp: the schema as it was.
  ASSERT_OK_AND_ASSIGN(auto again, StampTypeChangeVersions(stamped, 8));
  EXPECT_EQ(again, stamped);
  EXPECT_TRUE(IsError(StampTypeChangeVersions("{", 1).status(), ErrorCode::kCorruptLog));
}

}  // namespace
}  // namespace ampdelta::delta
