#include "ampdelta/loader/stream/reorg_undo.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/read/scan.h"
#include "ampdelta/loader/state/takeover.h"
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
  // With `as_spans`, the ranges are recorded as one file's coalesced spans (what the
  // stream's compaction leaves) instead of microbatch ranges.
  void Commit(const std::vector<amp::BlockRange>& ranges,
              std::optional<std::vector<amp::BlockRange>> tagged = std::nullopt,
              bool as_spans = false) {
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
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema, create_));
    writer->SetFileTags(
        {{as_spans ? SpansTagKey(kApp) : RangesTagKey(kApp),
          RangesToTag(as_spans ? CoalesceRanges(ranges) : tagged.value_or(ranges))}});
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
    const auto undo = Invalidate(state, invalidated);
    delta::TableWriteOptions options;
    options.read_snapshot = snapshot;
    auto writer = *delta::TableWriter::Open(store_, snapshot->schema(), options);
    auto staged =
        StageUndo(*snapshot, kApp, state, invalidated, undo, "block_num", writer.get());
    EXPECT_OK(staged.status());
    EXPECT_OK(writer->Commit().status());
    return staged.ok() ? *staged : UndoStaged{};
  }

  // Blocks first..first+count-1 written without stream tags (another engine's rows).
  void WriteUntagged(int64_t first, int64_t count) {
    auto schema = arrow::schema({arrow::field("block_num", arrow::int64())});
    arrow::Int64Builder numbers;
    for (int64_t block = first; block < first + count; ++block) {
      ASSERT_OK(numbers.Append(block));
    }
    auto batch = arrow::RecordBatch::Make(schema, count, {*numbers.Finish()});
    delta::TableWriteOptions options = create_;
    if (store_->Head("_delta_log/00000000000000000000.json").ok()) {
      options.read_snapshot = Snapshot();
    }
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema, options));
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  // StageForeignUndo of blocks from..to, committed; the rows it removed.
  int64_t UndoForeign(uint64_t from, uint64_t to = UINT64_MAX) {
    auto snapshot = Snapshot();
    delta::TableWriteOptions options;
    options.read_snapshot = snapshot;
    auto undo = *delta::TableWriter::Open(store_, snapshot->schema(), options);
    auto removed = StageForeignUndo(*snapshot, "block_num", from, undo.get(), to);
    EXPECT_OK(removed.status());
    EXPECT_OK(undo->Commit().status());
    return removed.ok() ? *removed : -1;
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
  // How Commit() writes (and creates) the table.
  delta::TableWriteOptions create_;
};

TEST_F(ReorgUndoTest, TheMicrobatchesFromTheForkOnAreRemovedAndTheRestKeepTheirTags) {
  Commit({Range(0, 4), Range(5, 9)});
  Commit({Range(10, 14), Range(15, 19)});
  StreamState before = *ReadStreamState(Snapshot().get(), kApp);
  EXPECT_EQ(Invalidate(before, {Range(12, 12)}).batch_ids,
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

TEST_F(ReorgUndoTest, WithDeletionVectorsTheUndoMarksRowsAndTheFileKeepsItsValidRanges) {
  create_.configuration = {{"delta.enableDeletionVectors", "true"}};
  Commit({Range(0, 2), Range(3, 4), Range(5, 9)});
  Commit({Range(10, 14), Range(15, 19)});
  std::set<std::string> paths_before;
  const auto before = Snapshot();
  for (const auto& file : before->files()) paths_before.insert(file.path);
  const UndoStaged staged = Undo({Range(7, 7)});  // forks inside 5..9
  EXPECT_EQ(staged.rows_removed, 15);
  EXPECT_EQ(staged.files_marked, 1);  // the first file stays, 5..9 marked
  EXPECT_EQ(staged.files_rewritten, 0);
  EXPECT_EQ(Blocks(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  auto snapshot = Snapshot();
  ASSERT_EQ(snapshot->files().size(), 1u);
  const delta::Add& file = snapshot->files().front();
  EXPECT_EQ(paths_before.count(file.path), 1u) << "the undo wrote a new file";
  ASSERT_TRUE(file.deletion_vector);
  EXPECT_EQ(file.deletion_vector->cardinality, 5);
  EXPECT_EQ(*file.tags->at(RangesTagKey(kApp)), RangesToTag({Range(0, 2), Range(3, 4)}));
  StreamState after = *ReadStreamState(snapshot.get(), kApp);
  EXPECT_EQ(after.ranges["mainnet"],
            (std::vector<amp::BlockRange>{Range(0, 2), Range(3, 4)}));

  // A second undo reaches into the marked file: its DV grows.
  const UndoStaged again = Undo({Range(3, 3)});
  EXPECT_EQ(again.rows_removed, 2);
  EXPECT_EQ(again.files_marked, 1);
  EXPECT_EQ(Blocks(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Snapshot()->files().front().deletion_vector->cardinality, 7);
}

TEST_F(ReorgUndoTest, WithDeletionVectorsUntaggedRowsFromTheForkOnAreMarked) {
  // Another engine's compaction left the rows without tags.
  create_.configuration = {{"delta.enableDeletionVectors", "true"}};
  WriteUntagged(0, 10);
  const int64_t removed = UndoForeign(6);
  EXPECT_EQ(removed, 4);
  EXPECT_EQ(Blocks(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(Snapshot()->files().size(), 1u);
  EXPECT_EQ(Snapshot()->files().front().deletion_vector->cardinality, 4);
}

TEST_F(ReorgUndoTest, AnUndoBoundedAboveRemovesOnlyTheUntaggedRowsInItsBlocks) {
  // A partition of the SDK's parallel load, run again, replaces blocks 3..6 only: the
  // file holding 0..9 is rewritten with the others, the file holding 20..29 is not read.
  WriteUntagged(0, 10);
  WriteUntagged(20, 10);
  auto snapshot = Snapshot();
  const int64_t removed = UndoForeign(3, 6);
  EXPECT_EQ(removed, 4);
  std::vector<int64_t> expected = {0, 1, 2, 7, 8, 9};
  for (int64_t block = 20; block < 30; ++block) expected.push_back(block);
  EXPECT_EQ(Blocks(), expected);
  // The file wholly above the bound is the same file.
  std::set<std::string> before_paths, after_paths;
  for (const auto& file : snapshot->files()) before_paths.insert(file.path);
  const auto after = Snapshot();
  for (const auto& file : after->files()) after_paths.insert(file.path);
  std::vector<std::string> kept;
  std::set_intersection(before_paths.begin(), before_paths.end(), after_paths.begin(),
                        after_paths.end(), std::back_inserter(kept));
  EXPECT_EQ(kept.size(), 1u);
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

TEST_F(ReorgUndoTest, AReorgIntoACompactedSpanRemovesTheSpansRowsByBlockNumber) {
  // 0..29 compacted into one file recording the span 0..29 (its rows keep the batch ids
  // of their microbatches, which the span's id is not), then two microbatch files.
  Commit({Range(0, 9), Range(10, 19), Range(20, 29)}, std::nullopt, /*as_spans=*/true);
  Commit({Range(30, 34)});
  Commit({Range(35, 39)});
  StreamState before = *ReadStreamState(Snapshot().get(), kApp);
  ASSERT_EQ(before.spans["mainnet"].size(), 1u);
  const Invalidation undo = Invalidate(before, {Range(25, 25)});
  EXPECT_EQ(undo.spans.size(), 1u);
  EXPECT_EQ(undo.batch_ids.size(), 2u);
  const UndoStaged staged = Undo({Range(25, 25)});  // a fork inside the span
  EXPECT_EQ(staged.rows_removed, 40);  // all of the span goes, and what followed it
  EXPECT_EQ(staged.files_touched, 3);
  EXPECT_TRUE(Blocks().empty());
  EXPECT_TRUE(staged.surviving.empty());
  EXPECT_FALSE(ReadStreamState(Snapshot().get(), kApp)->HasRecords());
}

TEST_F(ReorgUndoTest, ASpanBeforeTheForkStaysWithItsRowsAndIsTheResumePoint) {
  Commit({Range(0, 9), Range(10, 19)}, std::nullopt, /*as_spans=*/true);
  Commit({Range(20, 29)}, std::nullopt, /*as_spans=*/true);
  Commit({Range(30, 34)});
  const UndoStaged staged = Undo({Range(32, 32)});
  EXPECT_EQ(staged.rows_removed, 5);
  ASSERT_EQ(staged.surviving.size(), 1u);
  EXPECT_EQ(staged.surviving[0].end, 29u);
  EXPECT_EQ(Blocks().size(), 30u);
  StreamState after = *ReadStreamState(Snapshot().get(), kApp);
  EXPECT_TRUE(after.ranges.empty());
  EXPECT_EQ(after.spans["mainnet"].size(), 2u);
  EXPECT_EQ(after.ResumeCursor().at("mainnet").number, 29u);
}

TEST_F(ReorgUndoTest, AFileHoldingASpanAndAnInvalidatedRangeKeepsTheSpanAndItsRows) {
  // One file records the span 0..19 and the microbatch 20..29 (as an undo's rewrite of
  // files holding both leaves them).
  arrow::Int64Builder numbers;
  arrow::StringBuilder ids;
  for (int64_t block = 0; block < 30; ++block) {
    ASSERT_OK(numbers.Append(block));
    ASSERT_OK(ids.Append(block < 20 ? "old" : BatchId(Range(20, 29))));
  }
  auto schema = arrow::schema({arrow::field("block_num", arrow::int64()),
                               arrow::field(kBatchIdColumn, arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 30, {*numbers.Finish(), *ids.Finish()});
  ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema, {}));
  writer->SetFileTags({{SpansTagKey(kApp), RangesToTag({Range(0, 19)})},
                       {RangesTagKey(kApp), RangesToTag({Range(20, 29)})}});
  ASSERT_OK(writer->Write(batch));
  ASSERT_OK(writer->Commit().status());
  const UndoStaged staged = Undo({Range(25, 25)});
  EXPECT_EQ(staged.rows_removed, 10);
  EXPECT_EQ(staged.files_rewritten, 1);
  EXPECT_EQ(Blocks().size(), 20u);
  EXPECT_EQ(Blocks().back(), 19);
  StreamState after = *ReadStreamState(Snapshot().get(), kApp);
  EXPECT_TRUE(after.ranges.empty());
  EXPECT_EQ(after.spans["mainnet"], (std::vector<amp::BlockRange>{Range(0, 19)}));
}

TEST_F(ReorgUndoTest, AReorgIntoASpanWithoutTheBlockColumnIsRefused) {
  Commit({Range(0, 9)}, std::nullopt, /*as_spans=*/true);
  auto snapshot = Snapshot();
  auto state = *ReadStreamState(snapshot.get(), kApp);
  delta::TableWriteOptions options;
  options.read_snapshot = snapshot;
  auto undo = *delta::TableWriter::Open(store_, snapshot->schema(), options);
  EXPECT_THAT(StageUndo(*snapshot, kApp, state, {Range(5, 5)},
                        Invalidate(state, {Range(5, 5)}), "no_such_column", undo.get()),
              testing::StatusHasMessage("no integer block column 'no_such_column'"));
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
                        Invalidate(state, {Range(5, 5)}), "block_num", undo.get()),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
}

}  // namespace
}  // namespace ampdelta::loader
