#include "ampdelta/loader/reorg_undo.h"

#include <algorithm>
#include <optional>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/read/scan.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

const std::string kApp = "app";

amp::BlockRange Range(uint64_t start, uint64_t end) {
  amp::BlockRange range;
  range.network = "mainnet";
  range.start = start;
  range.end = end;
  range.hash = "0x" + std::string(63, '0') + std::to_string(end % 10);
  return range;
}

// One commit per group of microbatches: rows block_num start..end of each range, their
// _amp_batch_id, and the group's ranges as the file tag (a superset, as a commit
// group's).
class ReorgUndoTest : public ::testing::Test {
 protected:
  void Commit(const std::vector<amp::BlockRange>& ranges,
              std::optional<std::vector<amp::BlockRange>> tagged = std::nullopt) {
    arrow::Int64Builder numbers;
    arrow::StringBuilder ids;
    for (const auto& range : ranges) {
      for (uint64_t block = range.start; block <= range.end; ++block) {
        ASSERT_OK(numbers.Append(static_cast<int64_t>(block)));
        ASSERT_OK(ids.Append(BatchId(range)));
      }
    }
    auto schema = arrow::schema({arrow::field("block_num", arrow::int64()),
                                 arrow::field(kBatchIdColumn, arrow::utf8())});
    const int64_t rows = numbers.length();
    auto batch =
        arrow::RecordBatch::Make(schema, rows, {*numbers.Finish(), *ids.Finish()});
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema, {}));
    writer->SetFileTags({{RangesTagKey(kApp), RangesToTag(tagged.value_or(ranges))}});
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  std::shared_ptr<const delta::Snapshot> Snapshot() {
    return *delta::Snapshot::Load(store_);
  }

  std::vector<int64_t> Blocks() {
    auto scan = *delta::TableScan::Make(Snapshot(), {{"block_num"}, std::nullopt});
    auto table = *scan->ToTable();
    std::vector<int64_t> out;
    for (const auto& chunk : table->column(0)->chunks()) {
      const auto& values = static_cast<const arrow::Int64Array&>(*chunk);
      for (int64_t i = 0; i < values.length(); ++i) out.push_back(values.Value(i));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Undo `invalidated` the way a stream does, and commit it.
  UndoStaged Undo(const std::vector<amp::BlockRange>& invalidated) {
    auto snapshot = Snapshot();
    auto state = *ReadStreamState(snapshot.get(), kApp);
    const auto ids = InvalidatedBatchIds(state, invalidated);
    delta::TableWriteOptions options;
    options.read_snapshot = snapshot;
    auto writer = *delta::TableWriter::Open(store_, snapshot->schema(), options);
    auto staged = StageUndo(*snapshot, kApp, state, invalidated, ids, writer.get());
    EXPECT_OK(staged.status());
    EXPECT_OK(writer->Commit().status());
    return staged.ok() ? *staged : UndoStaged{};
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(ReorgUndoTest, TheMicrobatchesFromTheForkOnAreRemovedAndTheRestKeepTheirTags) {
  Commit({Range(0, 4), Range(5, 9)});
  Commit({Range(10, 14), Range(15, 19)});
  StreamState before = *ReadStreamState(Snapshot().get(), kApp);
  EXPECT_EQ(InvalidatedBatchIds(before, {Range(12, 12)}),
            (std::set<std::string>{BatchId(Range(10, 14)), BatchId(Range(15, 19))}));
  const UndoStaged staged = Undo({Range(7, 7)});  // forks inside 5..9
  EXPECT_EQ(staged.rows_removed, 15);
  EXPECT_EQ(staged.files_touched, 2);
  EXPECT_EQ(staged.files_rewritten, 1);  // the first file keeps 0..4
  ASSERT_EQ(staged.surviving.size(), 1u);
  EXPECT_EQ(staged.surviving[0], Range(0, 4));
  EXPECT_EQ(Blocks(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  StreamState after = *ReadStreamState(Snapshot().get(), kApp);
  EXPECT_EQ(after.ranges["mainnet"], (std::vector<amp::BlockRange>{Range(0, 4)}));
}

TEST_F(ReorgUndoTest,
       AFileTaggedWithAnInvalidatedRangeButHoldingNoneOfItsRowsIsOnlyRetagged) {
  // File A holds 0..9 but its commit group's tag also names 10..19, whose rows are in B.
  Commit({Range(0, 9)}, std::vector<amp::BlockRange>{Range(0, 9), Range(10, 19)});
  Commit({Range(10, 19)});
  const UndoStaged staged = Undo({Range(15, 15)});
  EXPECT_EQ(staged.rows_removed, 10);
  EXPECT_EQ(staged.files_touched, 2);
  EXPECT_EQ(staged.files_rewritten, 0);  // A is re-tagged, not rewritten; B goes
  EXPECT_EQ(Blocks(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  auto snapshot = Snapshot();
  ASSERT_EQ(snapshot->files().size(), 1u);
  EXPECT_EQ(*snapshot->files().front().tags->at(RangesTagKey(kApp)),
            RangesToTag({Range(0, 9)}));
  StreamState after = *ReadStreamState(snapshot.get(), kApp);
  EXPECT_EQ(after.ranges["mainnet"], (std::vector<amp::BlockRange>{Range(0, 9)}));
}

TEST_F(ReorgUndoTest, WithoutTheBatchIdColumnTheUndoIsRefused) {
  auto schema = arrow::schema({arrow::field("block_num", arrow::int64())});
  arrow::Int64Builder numbers;
  ASSERT_OK(numbers.Append(3));
  auto batch = arrow::RecordBatch::Make(schema, 1, {*numbers.Finish()});
  ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema, {}));
  writer->SetFileTags({{RangesTagKey(kApp), RangesToTag({Range(0, 9)})}});
  ASSERT_OK(writer->Write(batch));
  ASSERT_OK(writer->Commit().status());
  auto snapshot = Snapshot();
  auto state = *ReadStreamState(snapshot.get(), kApp);
  delta::TableWriteOptions options;
  options.read_snapshot = snapshot;
  auto undo = *delta::TableWriter::Open(store_, snapshot->schema(), options);
  EXPECT_THAT(StageUndo(*snapshot, kApp, state, {Range(5, 5)},
                        InvalidatedBatchIds(state, {Range(5, 5)}), undo.get()),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
}

}  // namespace
}  // namespace ampdelta::loader
