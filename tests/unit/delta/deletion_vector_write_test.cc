// Deletion vectors written by deletes, merges and their maintenance
// (`delta.enableDeletionVectors`, docs/downstream.md). Spark and DuckDB read the same
// tables in tests/interop/test_deletion_vectors.py.

#include <map>
#include <string>
#include <vector>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/deletion_vector_writer.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::ActionsOf;
using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::CommitOf;
using test_tables::Range;
using test_tables::WriteBatches;

std::vector<int64_t> Without(std::vector<int64_t> rows,
                             const std::vector<int64_t>& gone) {
  std::erase_if(rows, [&](int64_t row) {
    return std::find(gone.begin(), gone.end(), row) != gone.end();
  });
  return rows;
}

TableWriteOptions WithDeletionVectors() {
  TableWriteOptions options;
  options.configuration = {{"delta.enableDeletionVectors", "true"}};
  return options;
}

std::shared_ptr<arrow::Array> Mask(const std::vector<bool>& keep) {
  arrow::BooleanBuilder builder;
  EXPECT_OK(builder.AppendValues(keep));
  return *builder.Finish();
}

class DeletionVectorWriteTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Snapshot> Latest() { return *Snapshot::Load(store_); }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST(DeletionVectorFormatTest, SerializedBitmapsAndFilesReadBackAsWritten) {
  // Two buckets (rows past 2^32), a run and scattered rows.
  std::vector<uint64_t> rows = {0, 5, 6, 7, 8, 9, 1000, (uint64_t{1} << 32) + 3};
  ASSERT_OK_AND_ASSIGN(auto set, DeletedRows::FromRows(rows));
  const std::string bitmap = SerializeRoaring64Portable(set);
  ASSERT_OK_AND_ASSIGN(auto parsed, ParseRoaring64Portable(bitmap));
  EXPECT_EQ(parsed.ToVector(), rows);

  auto store = std::make_shared<storage::MemoryStore>();
  ASSERT_OK_AND_ASSIGN(
      std::string path_or_inline,
      UuidDeletionVectorPathOrInline("ab/", "0b3c2d1e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"));
  ASSERT_OK_AND_ASSIGN(std::string key, UuidDeletionVectorPath(path_or_inline));
  EXPECT_EQ(key, "ab/deletion_vector_0b3c2d1e-4f5a-4b6c-8d7e-9f0a1b2c3d4e.bin");
  ASSERT_OK(store->Put(key, arrow::Buffer::FromString(EncodeDeletionVectorFile(bitmap)),
                       storage::PutMode::kOverwrite));
  DeletionVectorDescriptor dv;
  dv.storage_type = "u";
  dv.path_or_inline_dv = path_or_inline;
  dv.offset = 1;
  dv.size_in_bytes = static_cast<int32_t>(bitmap.size());
  dv.cardinality = static_cast<int64_t>(rows.size());
  ASSERT_OK_AND_ASSIGN(auto loaded, LoadDeletionVector(*store, dv));
  EXPECT_EQ(loaded.ToVector(), rows);
  EXPECT_FALSE(UuidDeletionVectorPathOrInline("", "not-a-uuid").ok());
}

TEST_F(DeletionVectorWriteTest, ADeleteMarksRowsAndKeepsTheFile) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, WithDeletionVectors()).status());
  const std::string path = Latest()->files().front().path;

  ASSERT_OK_AND_ASSIGN(auto first, DeleteRows(store_, "block_num = 3"));
  EXPECT_EQ(first.files_marked, 1);
  EXPECT_EQ(first.files_removed, 0);
  EXPECT_EQ(first.files_added, 0);
  EXPECT_EQ(first.rows_deleted, 1);
  auto actions = CommitOf(*store_, *first.version);
  auto removes = ActionsOf<Remove>(actions);
  auto adds = ActionsOf<Add>(actions);
  ASSERT_EQ(removes.size(), 1u);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(removes[0].path, path);
  EXPECT_FALSE(removes[0].deletion_vector);
  EXPECT_EQ(adds[0].path, path);
  ASSERT_TRUE(adds[0].deletion_vector);
  EXPECT_EQ(adds[0].deletion_vector->storage_type, "u");
  EXPECT_EQ(adds[0].deletion_vector->cardinality, 1);
  EXPECT_TRUE(adds[0].data_change);
  auto stats = nlohmann::json::parse(*adds[0].stats);
  EXPECT_EQ(stats["numRecords"], 10);
  EXPECT_EQ(stats["tightBounds"], false);
  EXPECT_EQ(*BlockNumbers(store_), Without(Range(0, 10), {3}));

  // A second delete adds to the file's deletion vector: the remove names the old one.
  ASSERT_OK_AND_ASSIGN(auto second, DeleteRows(store_, "block_num >= 7"));
  EXPECT_EQ(second.files_marked, 1);
  EXPECT_EQ(second.rows_deleted, 3);
  actions = CommitOf(*store_, *second.version);
  removes = ActionsOf<Remove>(actions);
  adds = ActionsOf<Add>(actions);
  ASSERT_EQ(removes.size(), 1u);
  ASSERT_TRUE(removes[0].deletion_vector);
  EXPECT_EQ(removes[0].deletion_vector->cardinality, 1);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].deletion_vector->cardinality, 4);
  EXPECT_EQ(*BlockNumbers(store_), (std::vector<int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(Latest()->files().size(), 1u);

  // Deleting every row left removes the file.
  ASSERT_OK_AND_ASSIGN(auto last, DeleteRows(store_, "block_num < 7"));
  EXPECT_EQ(last.files_marked, 0);
  EXPECT_EQ(last.files_removed, 1);
  EXPECT_TRUE(Latest()->files().empty());
}

TEST_F(DeletionVectorWriteTest, ADeleteThatFailsHalfwayLeavesNoDeletionVectorBehind) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, WithDeletionVectors()).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 20)}).status());
  auto before = Latest();
  ASSERT_EQ(before->files().size(), 2u);
  // The second file is unreadable: the delete marks rows of the first (writing its
  // deletion vector), then fails on the second.
  const std::string second = before->FileKey(before->files()[1].path);
  ASSERT_OK(store_->Put(second, arrow::Buffer::FromString("not parquet"),
                        storage::PutMode::kOverwrite));
  EXPECT_FALSE(DeleteRows(store_, "block_num < 5 OR block_num >= 15").ok());
  EXPECT_EQ(Latest()->version(), before->version());
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("", ""));
  for (const auto& object : objects) {
    EXPECT_EQ(object.path.find("deletion_vector_"), std::string::npos) << object.path;
  }
}

TEST_F(DeletionVectorWriteTest, AFileReadsSomeColumnsWithItsDeletionVectorApplied) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, WithDeletionVectors()).status());
  ASSERT_OK(DeleteRows(store_, "block_num < 3").status());
  const auto snapshot = Latest();
  ASSERT_OK_AND_ASSIGN(auto table,
                       ReadDataFile(*snapshot, snapshot->files().front(), {"BLOCK_NUM"}));
  ASSERT_EQ(table->num_columns(), 1);
  EXPECT_EQ(table->schema()->field(0)->name(), "block_num");
  EXPECT_EQ(table->num_rows(), 7);
  EXPECT_FALSE(ReadDataFile(*snapshot, snapshot->files().front(), {"nope"}).ok());
}

TEST_F(DeletionVectorWriteTest, AColumnAfterNestedOnesReadsItsOwnValues) {
  // The wanted column's Parquet leaf comes after the nested column's two leaves.
  auto pair = arrow::struct_(
      {arrow::field("a", arrow::int32()), arrow::field("b", arrow::utf8())});
  arrow::StructBuilder pairs(pair, arrow::default_memory_pool(),
                             {std::make_shared<arrow::Int32Builder>(),
                              std::make_shared<arrow::StringBuilder>()});
  arrow::Int64Builder numbers;
  for (int64_t i = 0; i < 4; ++i) {
    ASSERT_OK(pairs.Append());
    ASSERT_OK(static_cast<arrow::Int32Builder*>(pairs.field_builder(0))->Append(7));
    ASSERT_OK(static_cast<arrow::StringBuilder*>(pairs.field_builder(1))->Append("x"));
    ASSERT_OK(numbers.Append(100 + i));
  }
  auto schema = arrow::schema(
      {arrow::field("pair", pair), arrow::field("block_num", arrow::int64())});
  auto batch = arrow::RecordBatch::Make(schema, 4, {*pairs.Finish(), *numbers.Finish()});
  ASSERT_OK(WriteBatches(store_, {batch}).status());
  const auto snapshot = Latest();
  ASSERT_OK_AND_ASSIGN(auto table,
                       ReadDataFile(*snapshot, snapshot->files().front(), {"block_num"}));
  ASSERT_OK_AND_ASSIGN(auto column, table->column(0)->chunk(0)->View(arrow::int64()));
  const auto& values = static_cast<const arrow::Int64Array&>(*column);
  ASSERT_EQ(values.length(), 4);
  EXPECT_EQ(values.null_count(), 0);
  EXPECT_EQ(values.Value(3), 103);
}

TEST_F(DeletionVectorWriteTest, TablesWithoutThePropertyRewriteFiles) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto result, DeleteRows(store_, "block_num = 3"));
  EXPECT_EQ(result.files_marked, 0);
  EXPECT_EQ(result.files_added, 1);
  EXPECT_FALSE(Latest()->files().front().deletion_vector);
  EXPECT_FALSE(WritesDeletionVectors(*Latest()));
}

TEST_F(DeletionVectorWriteTest, AMergeMarksTheReplacedRowsAndWritesTheNewOnes) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, WithDeletionVectors()).status());
  auto source = Blocks(8, 12, "base");
  MergeOptions merge;
  merge.keys = {"block_num"};
  ASSERT_OK_AND_ASSIGN(auto merged, MergeRows(store_, source->schema(), {source}, merge));
  EXPECT_EQ(merged.files_marked, 1);
  EXPECT_EQ(merged.files_rewritten, 0);
  EXPECT_EQ(merged.rows_updated, 2);
  EXPECT_EQ(merged.rows_copied, 0);
  EXPECT_EQ(*BlockNumbers(store_), Range(0, 12));
  int64_t marked = 0;
  const auto snapshot = Latest();
  for (const auto& file : snapshot->files()) {
    if (file.deletion_vector) {
      ++marked;
      EXPECT_EQ(file.deletion_vector->cardinality, 2);
    }
  }
  EXPECT_EQ(marked, 1);
}

TEST_F(DeletionVectorWriteTest, OptimizePurgesDeletionVectorsAndVacuumKeepsOnlyLiveOnes) {
  TableWriteOptions options = WithDeletionVectors();
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, options).status());
  ASSERT_OK(DeleteRows(store_, "block_num = 3").status());
  const std::string first_dv =
      *DeletionVectorFileKey(std::optional<DeletionVectorDescriptor>(
          *Latest()->files().front().deletion_vector));
  ASSERT_OK(DeleteRows(store_, "block_num = 4").status());
  const std::string second_dv =
      *DeletionVectorFileKey(std::optional<DeletionVectorDescriptor>(
          *Latest()->files().front().deletion_vector));
  EXPECT_NE(first_dv, second_dv);

  VacuumOptions vacuum;
  vacuum.retention_hours = 0;
  vacuum.enforce_retention = false;
  ASSERT_OK_AND_ASSIGN(auto cleaned, Vacuum(store_, vacuum));
  // The first DV only the tombstone used goes; the live file and its DV stay.
  EXPECT_EQ(cleaned.files, std::vector<std::string>{first_dv});
  EXPECT_OK(store_->Head(second_dv).status());
  EXPECT_EQ(*BlockNumbers(store_), Without(Range(0, 10), {3, 4}));

  ASSERT_OK_AND_ASSIGN(auto optimized, Optimize(store_));
  EXPECT_EQ(optimized.files_removed, 1);
  ASSERT_EQ(Latest()->files().size(), 1u);
  EXPECT_FALSE(Latest()->files().front().deletion_vector);
  EXPECT_EQ(*BlockNumbers(store_), Without(Range(0, 10), {3, 4}));
}

TEST_F(DeletionVectorWriteTest, MarkingMapsLiveRowsPastRowsDeletedBefore) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 6)}, WithDeletionVectors()).status());
  ASSERT_OK(DeleteRows(store_, "block_num = 1").status());
  const Add file = Latest()->files().front();
  DeletionVectorWriter writer(store_, "0123456789abcdef");
  // Live rows are 0, 2, 3, 4, 5: deleting the 2nd and 4th live ones is rows 2 and 4.
  ASSERT_OK_AND_ASSIGN(Add marked,
                       writer.MarkDeleted(file, *Mask({true, false, true, false, true})));
  ASSERT_OK_AND_ASSIGN(auto rows, LoadDeletionVector(*store_, *marked.deletion_vector));
  EXPECT_EQ(rows.ToVector(), (std::vector<uint64_t>{1, 2, 4}));
  ASSERT_EQ(writer.files().size(), 1u);
  EXPECT_EQ(writer.files()[0].rfind("0123456789abcdef/deletion_vector_", 0), 0u);

  // A mask that deletes nothing, everything, or has the wrong length is refused.
  EXPECT_FALSE(writer.MarkDeleted(file, *Mask({true, true, true, true, true})).ok());
  EXPECT_FALSE(writer.MarkDeleted(file, *Mask({false, false, false, false, false})).ok());
  EXPECT_FALSE(writer.MarkDeleted(file, *Mask({true, false})).ok());

  ASSERT_OK(writer.Abort());
  auto gone =
      store_->Head(*UuidDeletionVectorPath(marked.deletion_vector->path_or_inline_dv));
  EXPECT_FALSE(gone.ok());
}

TEST_F(DeletionVectorWriteTest, AnUndoCommitCountsMarkedFilesApartFromWrittenOnes) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}, WithDeletionVectors()).status());
  auto snapshot = Latest();
  TableWriteOptions options;
  options.read_snapshot = snapshot;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(store_, snapshot->schema(), options));
  ASSERT_NE(writer->deletion_vectors(), nullptr);
  const Add& file = snapshot->files().front();
  std::vector<bool> keep(10, true);
  keep[9] = false;
  ASSERT_OK_AND_ASSIGN(Add marked,
                       writer->deletion_vectors()->MarkDeleted(file, *Mask(keep)));
  writer->StageRemoves({RemoveFor(file)}, {snapshot->FileKey(file.path)});
  writer->StageAdds({marked});
  ASSERT_OK_AND_ASSIGN(auto result, writer->Commit());
  EXPECT_EQ(result.files_marked, 1);
  EXPECT_EQ(result.files_added, 0);
  EXPECT_EQ(result.files_removed, 0);
  const auto info = ActionsOf<CommitInfo>(CommitOf(*store_, result.commit.version));
  ASSERT_EQ(info.size(), 1u);
  auto metrics = info[0].operation_metrics;
  EXPECT_EQ(metrics["numDeletionVectorsAdded"], "1");
  EXPECT_EQ(metrics["numRemovedFiles"], "0");
  EXPECT_EQ(metrics["numFiles"], "0");
  EXPECT_EQ(*BlockNumbers(store_), Range(0, 9));
}

TEST(DeletionVectorLeaseTest, AWriteLeaseProtectsTheDeletionVectorsInItsFolder) {
  Leases leases;
  LeaseRecord lease;
  lease.token = "0123456789abcdef";
  leases.live.push_back(lease);
  EXPECT_TRUE(leases.Protects("0123456789abcdef/deletion_vector_x.bin"));
  EXPECT_FALSE(leases.Protects("fedcba9876543210/deletion_vector_x.bin"));
  EXPECT_FALSE(leases.Protects("0123456789abcdef/part-00000.parquet"));
  EXPECT_FALSE(leases.Protects("deletion_vector_x.bin"));
}

}  // namespace
}  // namespace ampdelta::delta
