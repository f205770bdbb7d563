// RowEdit (row_edit.h): the one place that decides how rows leave a file — read what
// decides, record the change, then mark or rewrite — for deletes, merges, reorg undos
// and takeovers alike.

#include "ampdelta/delta/write/row_edit.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <gtest/gtest.h>

#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::Blocks;
using test_tables::WriteBatches;

// A sink that keeps what it is given.
class RecordingSink : public RowSink {
 public:
  RecordingSink(DeletionVectorWriter* vectors, bool changes)
      : vectors_(vectors), changes_(changes) {}
  DeletionVectorWriter* deletion_vectors() override { return vectors_; }
  bool records_changes() const override { return changes_; }
  arrow::Status RecordChange(const std::shared_ptr<arrow::RecordBatch>& rows,
                             ChangeType type) override {
    recorded.emplace_back(rows, type);
    return arrow::Status::OK();
  }
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& rows) override {
    written.push_back(rows);
    return arrow::Status::OK();
  }

  std::vector<std::pair<std::shared_ptr<arrow::RecordBatch>, ChangeType>> recorded;
  std::vector<std::shared_ptr<arrow::RecordBatch>> written;

 private:
  DeletionVectorWriter* vectors_;
  bool changes_;
};

std::shared_ptr<arrow::Array> KeepBelow(const arrow::RecordBatch& rows, int64_t bound) {
  const auto& blocks =
      static_cast<const arrow::Int64Array&>(*rows.GetColumnByName("block_num"));
  arrow::BooleanBuilder keep;
  for (int64_t i = 0; i < blocks.length(); ++i)
    EXPECT_OK(keep.Append(blocks.Value(i) < bound));
  return *keep.Finish();
}

class RowEditTest : public ::testing::Test {
 protected:
  // One file of blocks 0-9 in a table that tracks rows (and, when asked, marks deleted
  // rows in deletion vectors).
  std::shared_ptr<const Snapshot> TableOfTenBlocks(bool deletion_vectors) {
    TableWriteOptions create;
    create.configuration = {{kEnableRowTrackingKey, "true"}};
    if (deletion_vectors) create.configuration["delta.enableDeletionVectors"] = "true";
    EXPECT_OK(WriteBatches(store_, {Blocks(0, 10)}, create).status());
    return *Snapshot::Load(store_);
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
  DeletionVectorWriter vectors_{store_, "0123456789abcdef"};
};

TEST_F(RowEditTest, AFileWhoseRowsAllStayIsNeitherRemovedNorRead) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/false);
  RecordingSink sink(nullptr, /*changes=*/true);
  RowEdit edit(*snapshot, &sink);
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file, {"block_num"}));
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 100)));
  EXPECT_EQ(done.rows_removed, 0);
  EXPECT_FALSE(done.rewritten);
  EXPECT_TRUE(edit.removes().empty());
  EXPECT_TRUE(edit.read_keys().empty());
  EXPECT_TRUE(sink.recorded.empty());
  EXPECT_TRUE(sink.written.empty());
}

TEST_F(RowEditTest, WithoutDeletionVectorsTheKeptRowsAreWrittenAgainWithTheirRowIds) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/false);
  RecordingSink sink(nullptr, /*changes=*/false);
  RowEdit edit(*snapshot, &sink);
  EXPECT_FALSE(edit.marks_only());
  EXPECT_TRUE(edit.rewrites());
  const Add& file = snapshot->files().front();
  // Rows written again keep their row IDs: every column is read, whatever decides.
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file, {"block_num"}));
  const auto columns =
      **MaterializedColumns(snapshot->metadata().configuration, *snapshot->schema());
  ASSERT_NE(rows->GetColumnByName(columns.row_id), nullptr);
  ASSERT_NE(rows->GetColumnByName("network"), nullptr);
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 4)));
  EXPECT_EQ(done.rows_removed, 6);
  EXPECT_EQ(done.rows_kept, 4);
  EXPECT_TRUE(done.rewritten);
  EXPECT_EQ(done.marked, nullptr);
  ASSERT_EQ(sink.written.size(), 1u);
  EXPECT_EQ(sink.written[0]->num_rows(), 4);
  EXPECT_NE(sink.written[0]->GetColumnByName(columns.row_id), nullptr);
  ASSERT_EQ(edit.removes().size(), 1u);
  EXPECT_EQ(edit.removes()[0].path, file.path);
  EXPECT_EQ(edit.read_keys(), std::vector<std::string>{snapshot->FileKey(file.path)});
  EXPECT_TRUE(edit.TakeMarked().empty());
}

TEST_F(RowEditTest, WithDeletionVectorsOnlyTheDecidingColumnsAreReadAndTheFileIsMarked) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/true);
  RecordingSink sink(&vectors_, /*changes=*/false);
  RowEdit edit(*snapshot, &sink);
  EXPECT_TRUE(edit.marks_only());
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file, {"block_num"}));
  EXPECT_EQ(rows->num_columns(), 1);
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 7)));
  EXPECT_EQ(done.rows_removed, 3);
  EXPECT_FALSE(done.rewritten);
  ASSERT_NE(done.marked, nullptr);
  EXPECT_EQ(done.marked->path, file.path);
  ASSERT_TRUE(done.marked->deletion_vector.has_value());
  EXPECT_EQ(done.marked->deletion_vector->cardinality, 3);
  EXPECT_TRUE(sink.written.empty());
  EXPECT_EQ(edit.removes().size(), 1u);  // the file's old add, replaced by the marked one
  EXPECT_EQ(edit.TakeMarked().size(), 1u);
}

TEST_F(RowEditTest, WithAChangeFeedTheRemovedRowsAreRecordedWholeAsTheCallerSays) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/true);
  RecordingSink sink(&vectors_, /*changes=*/true);
  RowEdit edit(*snapshot, &sink);
  // The change feed holds whole rows: marking alone no longer decides what is read.
  EXPECT_FALSE(edit.marks_only());
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file, {"block_num"}));
  ASSERT_NE(rows->GetColumnByName("network"), nullptr);
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 8),
                                                ChangeType::kUpdatePreimage));
  ASSERT_NE(done.marked, nullptr);
  ASSERT_EQ(sink.recorded.size(), 1u);
  EXPECT_EQ(sink.recorded[0].second, ChangeType::kUpdatePreimage);
  const auto& gone = static_cast<const arrow::Int64Array&>(
      *sink.recorded[0].first->GetColumnByName("block_num"));
  ASSERT_EQ(gone.length(), 2);
  EXPECT_EQ(gone.Value(0), 8);
  EXPECT_EQ(gone.Value(1), 9);
}

TEST_F(RowEditTest, AFileThatKeepsNoRowIsRemovedNeitherMarkedNorWrittenAgain) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/true);
  RecordingSink sink(&vectors_, /*changes=*/false);
  RowEdit edit(*snapshot, &sink);
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file, {"block_num"}));
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 0)));
  EXPECT_EQ(done.rows_removed, 10);
  EXPECT_EQ(done.marked, nullptr);
  EXPECT_FALSE(done.rewritten);
  EXPECT_TRUE(sink.written.empty());
  EXPECT_EQ(edit.removes().size(), 1u);
  EXPECT_TRUE(edit.TakeMarked().empty());
}

TEST_F(RowEditTest, ARewriteGivenInAnotherShapeIsWhatIsWrittenAgain) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/false);
  RecordingSink sink(nullptr, /*changes=*/false);
  RowEdit edit(*snapshot, &sink);
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file));
  // A merge's rows in its evolved schema: one column more.
  ASSERT_OK_AND_ASSIGN(auto evolved, rows->AddColumn(rows->num_columns(), "extra",
                                                     rows->GetColumnByName("network")));
  ASSERT_OK_AND_ASSIGN(FileEdit done, edit.Drop(file, rows, KeepBelow(*rows, 5),
                                                ChangeType::kDelete, evolved));
  EXPECT_TRUE(done.rewritten);
  ASSERT_EQ(sink.written.size(), 1u);
  EXPECT_EQ(sink.written[0]->num_rows(), 5);
  EXPECT_NE(sink.written[0]->GetColumnByName("extra"), nullptr);
}

TEST_F(RowEditTest, AKeepMaskWithANullIsAnErrorAndChangesNothing) {
  auto snapshot = TableOfTenBlocks(/*deletion_vectors=*/true);
  RecordingSink sink(&vectors_, /*changes=*/true);
  RowEdit edit(*snapshot, &sink);
  const Add& file = snapshot->files().front();
  ASSERT_OK_AND_ASSIGN(auto rows, edit.Read(file));
  arrow::BooleanBuilder keep;
  ASSERT_OK(keep.AppendValues(std::vector<bool>(9, true)));
  ASSERT_OK(keep.AppendNull());
  ASSERT_OK_AND_ASSIGN(auto mask, keep.Finish());
  EXPECT_FALSE(edit.Drop(file, rows, mask).ok());
  EXPECT_TRUE(edit.removes().empty());
  EXPECT_TRUE(sink.recorded.empty());
  EXPECT_TRUE(edit.TakeMarked().empty());
}

}  // namespace
}  // namespace ampdelta::delta
