#include "ampdelta/loader/state/stream_cursor_log.h"

#include <arrow/builder.h>
#include <arrow/record_batch.h>

#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/loader/state/stream_state.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::loader {
namespace {

const std::string kApp = "app";

amp::BlockRange Range(uint64_t start, uint64_t end, std::string network = "mainnet") {
  amp::BlockRange range;
  range.network = std::move(network);
  range.start = start;
  range.end = end;
  range.hash = "0x" + std::string(63, '0') + std::to_string(end % 10);
  return range;
}

TEST(CursorLogTest, ARecordRoundTripsThroughItsDomain) {
  const CursorLog log =
      AdvanceCursorLog({}, {Range(10, 19), Range(20, 25), Range(3, 4, "base")});
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log.at("mainnet").first, 10u);
  EXPECT_EQ(log.at("mainnet").last, Range(20, 25));
  const delta::DomainMetadata domain = CursorDomain(kApp, log);
  EXPECT_EQ(domain.domain, "ampdelta.stream.app");
  EXPECT_FALSE(domain.removed);

  auto store = std::make_shared<storage::MemoryStore>("memory://t");
  auto schema = arrow::schema({arrow::field("x", arrow::int64())});
  delta::TableWriteOptions options;
  options.writer_features = {delta::TableFeature::kDomainMetadata};
  options.domains = {domain};
  ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store, schema, options));
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, delta::Snapshot::Load(store));
  EXPECT_TRUE(delta::HasWriterFeature(snapshot->protocol(),
                                      delta::TableFeature::kDomainMetadata));
  EXPECT_FALSE(snapshot->protocol().reader_features.has_value());
  ASSERT_OK_AND_ASSIGN(auto read, ReadCursorLog(*snapshot, kApp));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read, log);
  ASSERT_OK_AND_ASSIGN(auto other, ReadCursorLog(*snapshot, "other"));
  EXPECT_FALSE(other.has_value());
}

TEST(CursorLogTest, AdvancingKeepsTheFirstBlockAndTakesTheNewestRange) {
  CursorLog log = AdvanceCursorLog({}, {Range(10, 19)});
  log = AdvanceCursorLog(std::move(log), {Range(20, 20), Range(21, 30)});
  EXPECT_EQ(log.at("mainnet").first, 10u);
  EXPECT_EQ(log.at("mainnet").last, Range(21, 30));
}

class CursorLogTableTest : public ::testing::Test {
 protected:
  std::shared_ptr<const delta::Snapshot> Snapshot() {
    return *delta::Snapshot::Load(store_);
  }

  // A commit of rows `start..end` tagged with their range (unless `tagged` is false),
  // recording `log` as the stream's cursor when given.
  void Commit(const amp::BlockRange& range, std::optional<CursorLog> log,
              bool tagged = true, delta::SaveMode mode = delta::SaveMode::kAppend) {
    arrow::Int64Builder numbers;
    for (uint64_t block = range.start; block <= range.end; ++block) {
      ASSERT_OK(numbers.Append(static_cast<int64_t>(block)));
    }
    const int64_t rows = numbers.length();  // before Finish() empties the builder
    auto batch = arrow::RecordBatch::Make(schema_, rows, {*numbers.Finish()});
    delta::TableWriteOptions options;
    options.mode = mode;
    if (log) {
      options.writer_features = {delta::TableFeature::kDomainMetadata};
      options.domains = {CursorDomain(kApp, *log)};
    }
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema_, options));
    if (tagged) writer->SetFileTags({{RangesTagKey(kApp), RangesToTag({range})}});
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  // What another engine's compaction does: the same rows in one file, without tags.
  void CompactDroppingTags(uint64_t first, uint64_t last) {
    auto snapshot = Snapshot();
    arrow::Int64Builder numbers;
    for (uint64_t block = first; block <= last; ++block) {
      ASSERT_OK(numbers.Append(static_cast<int64_t>(block)));
    }
    const int64_t rows = numbers.length();  // before Finish() empties the builder
    auto batch = arrow::RecordBatch::Make(schema_, rows, {*numbers.Finish()});
    delta::TableWriteOptions options;
    options.read_snapshot = snapshot;
    options.operation = "OPTIMIZE";
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema_, options));
    std::vector<delta::Remove> removes;
    for (const auto& file : snapshot->files()) {
      removes.push_back(delta::RemoveFor(file, /*data_change=*/false));
    }
    writer->StageRemoves(std::move(removes), {});
    ASSERT_OK(writer->Write(batch));
    ASSERT_OK(writer->Commit().status());
  }

  std::shared_ptr<storage::MemoryStore> store_ =
      std::make_shared<storage::MemoryStore>("memory://t");
  std::shared_ptr<arrow::Schema> schema_ =
      arrow::schema({arrow::field("block_num", arrow::int64())});
};

TEST_F(CursorLogTableTest, TheLogsCursorCountsWhenAnotherEngineDroppedTheTags) {
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9)}));
  Commit(Range(10, 19), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  CompactDroppingTags(0, 19);
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_TRUE(state.HasRecords());
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 19u);
  EXPECT_EQ(state.ResumeCursor().at("mainnet").hash, Range(10, 19).hash);
  EXPECT_EQ(state.untagged_from.at("mainnet"), 0u);
  EXPECT_EQ(state.cursor_log.at("mainnet").last, Range(10, 19));
}

TEST_F(CursorLogTableTest, TagsThatKnowAsMuchAsTheLogAreWhatCounts) {
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9)}));
  Commit(Range(10, 19), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 19u);
  EXPECT_TRUE(state.untagged_from.empty());
}

TEST_F(CursorLogTableTest, ALogAheadOfTheRowsIsTakenBackProgressNotCompaction) {
  // The log says 19, but the rows of 10..19 are gone (another engine's restore that kept
  // the domain): the tags, i.e. the rows, say what the table holds.
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 9u);
  EXPECT_TRUE(state.untagged_from.empty());
}

TEST_F(CursorLogTableTest, UntaggedRowsBelowWhatTheTagsKnowDoNotMakeTheLogCount) {
  // Another writer's rows (untagged, blocks 0..4) and the stream's tagged 5..9; the log
  // claims 19 but no untagged row reaches past 9.
  Commit(Range(0, 4), std::nullopt, /*tagged=*/false);
  Commit(Range(5, 9), AdvanceCursorLog({}, {Range(5, 9), Range(10, 19)}));
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 9u);
}

TEST_F(CursorLogTableTest, CompactedRowsBelowTaggedOnesAreStillTheStreams) {
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9)}));
  CompactDroppingTags(0, 9);
  Commit(Range(10, 19), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 19u);
  EXPECT_EQ(state.untagged_from.at("mainnet"), 0u);  // a reorg into 0..9 reaches them
}

TEST_F(CursorLogTableTest, ALogWhoseNewestRangeNoRowReachesIsNotTrusted) {
  // Another engine's restore to just after a compaction of 0..9 that kept the domain,
  // which says 19: the compacted rows do not reach 10..19.
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9)}));
  CompactDroppingTags(0, 9);
  Commit(Range(0, 0), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}), false,
         delta::SaveMode::kAppend);
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(Snapshot().get(), kApp, "block_num"));
  EXPECT_FALSE(state.ResumeCursor().count("mainnet") != 0 &&
               state.ResumeCursor().at("mainnet").number == 19u);
}

TEST_F(CursorLogTableTest, ARestoreTakesTheCursorBackWithTheRows) {
  Commit(Range(0, 9), AdvanceCursorLog({}, {Range(0, 9)}));
  CompactDroppingTags(0, 9);  // version 1
  Commit(Range(10, 19), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  ASSERT_OK(delta::Restore(store_, 1).status());
  auto snapshot = Snapshot();
  ASSERT_OK_AND_ASSIGN(auto log, ReadCursorLog(*snapshot, kApp));
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(log->at("mainnet").last, Range(0, 9));
  ASSERT_OK_AND_ASSIGN(auto state, ReadStreamState(snapshot.get(), kApp, "block_num"));
  EXPECT_EQ(state.ResumeCursor().at("mainnet").number, 9u);
}

TEST_F(CursorLogTableTest, ARestoreToBeforeTheCursorRemovesIt) {
  Commit(Range(0, 9), std::nullopt);
  Commit(Range(10, 19), AdvanceCursorLog({}, {Range(0, 9), Range(10, 19)}));
  ASSERT_OK(delta::Restore(store_, 0).status());
  ASSERT_OK_AND_ASSIGN(auto log, ReadCursorLog(*Snapshot(), kApp));
  EXPECT_FALSE(log.has_value());
}

TEST_F(CursorLogTableTest, AMalformedOrNewerRecordIsAnErrorNotAFreshStart) {
  Commit(Range(0, 9), std::nullopt);
  for (const auto& [configuration, code] : std::vector<std::pair<std::string, ErrorCode>>{
           {"not json", ErrorCode::kCorruptLog},
           {R"({"version":1,"networks":{"mainnet":{"first":0}}})",
            ErrorCode::kCorruptLog},
           {R"({"version":1,"networks":{"mainnet":{"first":-1,"last":{}}}})",
            ErrorCode::kCorruptLog},
           {R"({"version":2,"networks":{}})", ErrorCode::kUnsupportedFeature}}) {
    delta::TableWriteOptions options;
    options.writer_features = {delta::TableFeature::kDomainMetadata};
    options.domains = {
        delta::DomainMetadata{CursorDomainName(kApp), configuration, false}};
    ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema_, options));
    ASSERT_OK(writer->Commit().status());
    EXPECT_THAT(ReadStreamState(Snapshot().get(), kApp, "block_num"),
                testing::HasErrorCode(code))
        << configuration;
  }
}

TEST_F(CursorLogTableTest, DomainMetadataNeedsTheFeature) {
  Commit(Range(0, 9), std::nullopt);
  delta::TableWriteOptions options;
  options.domains = {CursorDomain(kApp, AdvanceCursorLog({}, {Range(0, 9)}))};
  ASSERT_OK_AND_ASSIGN(auto writer, delta::TableWriter::Open(store_, schema_, options));
  EXPECT_THAT(writer->Commit(), testing::HasErrorCode(ErrorCode::kInvalidInput));
  EXPECT_EQ(Snapshot()->version(), 0);
}

}  // namespace
}  // namespace ampdelta::loader
