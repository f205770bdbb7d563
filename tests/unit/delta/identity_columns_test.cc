#include "ampdelta/delta/write/identity_columns.h"

#include <map>
#include <unordered_map>

#include <arrow/json/from_string.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

// `id` as Spark's `BIGINT GENERATED … AS IDENTITY (START WITH start INCREMENT BY step)`
// records it, and a `name`.
std::shared_ptr<arrow::Schema> IdentitySchema(int64_t start, int64_t step,
                                              std::optional<int64_t> mark,
                                              bool by_default = false) {
  std::unordered_map<std::string, std::string> entries = {
      {"delta.identity.start", std::to_string(start)},
      {"delta.identity.step", std::to_string(step)},
      {"delta.identity.allowExplicitInsert", by_default ? "true" : "false"}};
  if (mark) entries["delta.identity.highWaterMark"] = std::to_string(*mark);
  return arrow::schema({arrow::field("id", arrow::int64())
                            ->WithMetadata(arrow::key_value_metadata(entries)),
                        arrow::field("name", arrow::utf8())});
}

std::shared_ptr<arrow::RecordBatch> Names(const std::string& names) {
  auto array = *arrow::json::ArrayFromJSONString(arrow::utf8(), names);
  return arrow::RecordBatch::Make(arrow::schema({arrow::field("name", arrow::utf8())}),
                                  array->length(), {array});
}

std::vector<int64_t> Ids(const arrow::RecordBatch& batch) {
  const auto& ids = static_cast<const arrow::Int64Array&>(*batch.GetColumnByName("id"));
  return {ids.raw_values(), ids.raw_values() + ids.length()};
}

// A table whose `id` is an identity column, as Spark leaves it after writing `rows`.
std::shared_ptr<storage::MemoryStore> IdentityTable(
    const std::shared_ptr<arrow::Schema>& schema) {
  auto store = std::make_shared<storage::MemoryStore>();
  auto plain = arrow::schema(
      {arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())});
  auto first = arrow::RecordBatch::Make(
      plain, 2,
      {*arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 2]"),
       *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["a", "b"])")});
  EXPECT_OK(test_tables::WriteBatches(store, {first}).status());
  auto snapshot = *Snapshot::Load(store);
  Metadata metadata = snapshot->metadata();
  metadata.schema_string = *SchemaToJson(*schema);
  Transaction txn(store, snapshot);
  txn.SetMetadata(metadata);
  EXPECT_OK(txn.Commit().status());
  return store;
}

// id -> name of the table's rows.
std::map<int64_t, std::string> Rows(const std::shared_ptr<storage::ObjectStore>& store) {
  auto snapshot = *Snapshot::Load(store);
  auto scan = *TableScan::Make(snapshot, ScanOptions{});
  auto batch = *(*scan->ToTable())->CombineChunksToBatch();
  const auto ids = Ids(*batch);
  const auto& names =
      static_cast<const arrow::StringArray&>(*batch->GetColumnByName("name"));
  std::map<int64_t, std::string> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out[ids[i]] = names.GetString(static_cast<int64_t>(i));
  }
  EXPECT_EQ(out.size(), ids.size()) << "an identity value twice";
  return out;
}

std::optional<int64_t> HighWaterMark(const std::shared_ptr<storage::ObjectStore>& store) {
  auto columns = *IdentityColumnsOf(*(*Snapshot::Load(store))->schema());
  return columns.at(0).high_water_mark;
}

TEST(IdentityColumnsTest, ValuesContinueBeyondTheMarkOnTheSequenceOfStartAndStep) {
  // The mark 12 is off the sequence 1, 6, 11, 16…: the next value is 16.
  ASSERT_OK_AND_ASSIGN(
      auto assigner,
      IdentityAssigner::Make(*IdentitySchema(1, 5, 12), *Names("[]")->schema(), false));
  ASSERT_OK_AND_ASSIGN(auto first, assigner.Fill(Names(R"(["a", "b"])")));
  ASSERT_OK_AND_ASSIGN(auto second, assigner.Fill(Names(R"(["c"])")));
  EXPECT_EQ(Ids(*first), (std::vector<int64_t>{16, 21}));
  EXPECT_EQ(Ids(*second), (std::vector<int64_t>{26}));
  ASSERT_OK_AND_ASSIGN(auto marked,
                       assigner.AdvanceHighWaterMarks(IdentitySchema(1, 5, 12)));
  EXPECT_EQ(FieldMetadataValue(*marked->field(0), "delta.identity.highWaterMark"), "26");
  // A descending sequence with no mark yet starts at its start.
  ASSERT_OK_AND_ASSIGN(auto down, IdentityAssigner::Make(*IdentitySchema(-1, -2, {}),
                                                         *Names("[]")->schema(), false));
  ASSERT_OK_AND_ASSIGN(auto values, down.Fill(Names(R"(["a", "b", "c"])")));
  EXPECT_EQ(Ids(*values), (std::vector<int64_t>{-1, -3, -5}));
}

TEST(IdentityColumnsTest, ValuesPastTheRangeOfALongRefuseTheBatch) {
  const int64_t near = INT64_MAX - 1;
  ASSERT_OK_AND_ASSIGN(
      auto assigner,
      IdentityAssigner::Make(*IdentitySchema(0, 1, near), *Names("[]")->schema(), false));
  ASSERT_OK(assigner.Fill(Names(R"(["last"])")).status());
  EXPECT_THAT(assigner.Fill(Names(R"(["over"])")),
              testing::StatusHasMessage("identity column id ran out of values"));
}

TEST(IdentityColumnsTest, AStepAsLargeAsTheRangeHandsOutEveryValueThatFitsALong) {
  // -9e18, 0, 9e18 fit a long although 2 * 9e18 does not.
  const int64_t step = 9000000000000000000;
  ASSERT_OK_AND_ASSIGN(auto assigner,
                       IdentityAssigner::Make(*IdentitySchema(-step, step, {}),
                                              *Names("[]")->schema(), false));
  ASSERT_OK_AND_ASSIGN(auto values, assigner.Fill(Names(R"(["a", "b", "c"])")));
  EXPECT_EQ(Ids(*values), (std::vector<int64_t>{-step, 0, step}));
  EXPECT_THAT(assigner.Fill(Names(R"(["d"])")),
              testing::StatusHasMessage("identity column id ran out of values"));
}

TEST(IdentityColumnsTest, AlwaysRefusesProvidedValuesAndByDefaultKeepsThem) {
  auto provided = IdentitySchema(1, 1, 2);
  EXPECT_THAT(IdentityAssigner::Make(*provided, *provided, false),
              ::testing::AllOf(testing::HasErrorCode(ErrorCode::kInvalidInput),
                               testing::StatusHasMessage(
                                   "column id is GENERATED ALWAYS AS IDENTITY")));
  // A rewrite of the table's own rows keeps them.
  ASSERT_OK_AND_ASSIGN(auto rewrite, IdentityAssigner::Make(*provided, *provided, true));
  EXPECT_FALSE(rewrite.generates());
  auto by_default = IdentitySchema(1, 1, 2, /*by_default=*/true);
  ASSERT_OK_AND_ASSIGN(auto kept, IdentityAssigner::Make(*by_default, *provided, false));
  EXPECT_FALSE(kept.generates());
  auto wrong = arrow::schema(
      {arrow::field("id", arrow::int32())
           ->WithMetadata(arrow::key_value_metadata(
               {{"delta.identity.start", "1"}, {"delta.identity.step", "1"}}))});
  EXPECT_THAT(IdentityColumnsOf(*wrong),
              testing::HasErrorCode(ErrorCode::kUnsupportedFeature));
}

TEST(IdentityColumnsTest, AnAppendGetsNewValuesAndTheCommitRecordsTheMark) {
  auto store = IdentityTable(IdentitySchema(1, 1, 2));
  ASSERT_OK(test_tables::WriteBatches(store, {Names(R"(["c", "d"])"), Names(R"(["e"])")})
                .status());
  EXPECT_EQ(Rows(store), (std::map<int64_t, std::string>{
                             {1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}, {5, "e"}}));
  EXPECT_EQ(HighWaterMark(store), 5);
  // A refused write (an ALWAYS column provided) leaves the table as it was.
  auto provided = arrow::RecordBatch::Make(
      arrow::schema(
          {arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8())}),
      1,
      {*arrow::json::ArrayFromJSONString(arrow::int64(), "[99]"),
       *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["x"])")});
  EXPECT_THAT(test_tables::WriteBatches(store, {provided}),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  EXPECT_EQ(Rows(store).size(), 5U);
}

TEST(IdentityColumnsTest, TwoWritersFromTheSameMarkNeverCommitTheSameValues) {
  auto store = IdentityTable(IdentitySchema(1, 1, 2));
  ASSERT_OK_AND_ASSIGN(auto first, TableWriter::Open(store, Names("[]")->schema(), {}));
  ASSERT_OK_AND_ASSIGN(auto second, TableWriter::Open(store, Names("[]")->schema(), {}));
  ASSERT_OK(first->Write(Names(R"(["c"])")));
  ASSERT_OK(second->Write(Names(R"(["d"])")));
  ASSERT_OK(first->Commit().status());
  EXPECT_THAT(second->Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(Rows(store), (std::map<int64_t, std::string>{{1, "a"}, {2, "b"}, {3, "c"}}));
}

TEST(IdentityColumnsTest, AMergeKeepsTheValuesOfUpdatedRowsAndGivesNewRowsNewOnes) {
  auto store = IdentityTable(IdentitySchema(1, 1, 2));
  MergeOptions options;
  options.keys = {"name"};
  ASSERT_OK(
      MergeRows(store, Names("[]")->schema(), {Names(R"(["b", "c", "b"])")}, options)
          .status());
  // b keeps 2; c is new. The source's duplicate b took a value that is never committed.
  const auto rows = Rows(store);
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows.at(1), "a");
  EXPECT_EQ(rows.at(2), "b");
  EXPECT_GT(rows.rbegin()->first, 2);
  EXPECT_EQ(rows.rbegin()->second, "c");
  EXPECT_GE(*HighWaterMark(store), rows.rbegin()->first);
}

TEST(IdentityColumnsTest, ARestoreKeepsTheMarkOfValuesHandedOutSince) {
  auto store = IdentityTable(IdentitySchema(1, 1, 2));
  const Version before = (*Snapshot::Load(store))->version();
  ASSERT_OK(test_tables::WriteBatches(store, {Names(R"(["c", "d"])")}).status());
  ASSERT_OK(Restore(store, before).status());
  EXPECT_EQ(HighWaterMark(store), 4);
  ASSERT_OK(test_tables::WriteBatches(store, {Names(R"(["e"])")}).status());
  EXPECT_EQ(Rows(store), (std::map<int64_t, std::string>{{1, "a"}, {2, "b"}, {5, "e"}}));
}

TEST(IdentityColumnsTest, ARestoreFindsTheMarkOfAColumnRenamedSince) {
  // Column mapping: the restored version calls the column `id`, the latest `rid`; the
  // physical name is the same column's.
  auto mapped = [](const std::string& name, int64_t mark) {
    auto field = IdentitySchema(1, 1, mark)->field(0)->WithName(name);
    auto metadata = field->metadata()->Copy();
    metadata->Append("delta.columnMapping.physicalName", R"("col-1")");
    return arrow::schema({field->WithMetadata(metadata)});
  };
  ASSERT_OK_AND_ASSIGN(auto kept, KeepHighWaterMarks(mapped("id", 1), *mapped("rid", 4)));
  EXPECT_EQ(FieldMetadataValue(*kept->field(0), "delta.identity.highWaterMark"), "4");
  // Another column of the same name is not the same column.
  ASSERT_OK_AND_ASSIGN(auto other,
                       KeepHighWaterMarks(IdentitySchema(1, 1, 1), *mapped("id", 4)));
  EXPECT_EQ(FieldMetadataValue(*other->field(0), "delta.identity.highWaterMark"), "1");
}

}  // namespace
}  // namespace ampdelta::delta
