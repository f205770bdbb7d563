#include "ampdelta/delta/log/column_mapping.h"

#include <arrow/array.h>
#include <arrow/json/from_string.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::ActionsOf;
using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::CommitOf;
using test_tables::WriteBatches;

std::shared_ptr<arrow::Schema> NestedSchema() {
  auto item = arrow::struct_(
      {arrow::field("to", arrow::binary()), arrow::field("value (wei)", arrow::int64())});
  return arrow::schema({arrow::field("block_num", arrow::int64()),
                        arrow::field("transfer", item),
                        arrow::field("calls", arrow::list(item)),
                        arrow::field("attrs", arrow::map(arrow::utf8(), item))});
}

TEST(ColumnMappingTest, EveryStructFieldGetsAnIdAndAPhysicalNameAndKeepsThem) {
  int64_t max_id = 0;
  auto mapped = AssignColumnMapping(*NestedSchema(), &max_id);
  // 4 columns, 2 fields in each of the three structs (in the list and the map too).
  EXPECT_EQ(max_id, 10);
  EXPECT_OK(CheckColumnMapping(*mapped));
  EXPECT_EQ(MaxColumnId(*mapped, {}), 10);
  EXPECT_EQ(MaxColumnId(*mapped, {{kMaxColumnIdKey, "12"}}), 12);
  EXPECT_EQ(PhysicalName(*mapped->field(1)).rfind("col-", 0), 0U);
  // Mapped fields keep their ids; a new column gets the next one.
  auto grown = mapped->AddField(4, arrow::field("gas", arrow::int64())).ValueOrDie();
  auto again = AssignColumnMapping(*grown, &max_id);
  EXPECT_EQ(max_id, 11);
  EXPECT_EQ(PhysicalName(*again->field(1)), PhysicalName(*mapped->field(1)));
  EXPECT_EQ(FieldMetadataValue(*again->field(4), "delta.columnMapping.id"), "11");
  // Unmapped fields are refused by the check.
  EXPECT_THAT(CheckColumnMapping(*grown), testing::StatusHasMessage("'gas'"));
}

TEST(ColumnMappingTest,
     DataFilesNameColumnsPhysicallyWithFieldIdsAndArraysAreViewedAsThem) {
  int64_t max_id = 0;
  auto mapped = AssignColumnMapping(*NestedSchema(), &max_id);
  auto physical = PhysicalSchema(*mapped);
  for (int i = 0; i < mapped->num_fields(); ++i) {
    EXPECT_EQ(physical->field(i)->name(), PhysicalName(*mapped->field(i)));
    EXPECT_EQ(physical->field(i)->metadata()->Get("PARQUET:field_id").ValueOrDie(),
              FieldMetadataValue(*mapped->field(i), "delta.columnMapping.id"))
        << i;
  }
  const auto& transfer = *physical->field(1)->type();
  EXPECT_EQ(transfer.field(1)->name(), PhysicalName(*mapped->field(1)->type()->field(1)));
  EXPECT_EQ(PhysicalColumnPath(*mapped, "Transfer.VALUE (wei)"),
            PhysicalName(*mapped->field(1)) + "." +
                PhysicalName(*mapped->field(1)->type()->field(1)));
  EXPECT_EQ(PhysicalColumnPath(*mapped, "transfer.nope"), "transfer.nope");
  EXPECT_EQ(PhysicalColumnName(*mapped, "BLOCK_NUM"), PhysicalName(*mapped->field(0)));
  // The same buffers under the physical names, nested ones included.
  auto calls = *arrow::json::ArrayFromJSONString(
      mapped->field(2)->type(), R"j([[{"to": "a", "value (wei)": 1}], null])j");
  auto viewed = ViewAs(calls, physical->field(2)->type());
  ASSERT_OK(viewed->ValidateFull());
  EXPECT_TRUE(viewed->type()->Equals(*physical->field(2)->type()));
  // The list's struct's int64 values: one buffer, two names.
  EXPECT_EQ(viewed->data()->child_data[0]->child_data[1]->buffers[1],
            calls->data()->child_data[0]->child_data[1]->buffers[1]);
  EXPECT_THAT(ColumnMappingModeOf({{kColumnMappingModeKey, "Names"}}),
              testing::StatusHasMessage("none, name or id"));
}

TEST(ColumnMappingTest,
     APartitionedMappedTableIsWrittenDeletedAndOptimizedByPhysicalName) {
  auto store = std::make_shared<storage::MemoryStore>();
  TableWriteOptions options;
  options.partition_by = {"network"};
  options.configuration = {{kColumnMappingModeKey, "name"}};
  ASSERT_OK(WriteBatches(store, {Blocks(0, 10, "eth"), Blocks(10, 20, "base")}, options)
                .status());
  ASSERT_OK(WriteBatches(store, {Blocks(20, 25, "eth")}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
  const std::string network = PhysicalColumnName(*snapshot->schema(), "network");
  const std::string block = PhysicalColumnName(*snapshot->schema(), "block_num");
  ASSERT_EQ(network.rfind("col-", 0), 0U);
  EXPECT_EQ(snapshot->metadata().configuration.at(kMaxColumnIdKey), "2");
  for (const auto& add : snapshot->files()) {
    EXPECT_EQ(add.partition_values.count(network), 1U);
    EXPECT_NE(add.stats->find(block), std::string::npos);
  }
  // Optimize groups eth's two files by their physical partition value; base's stays.
  ASSERT_OK_AND_ASSIGN(auto optimized, Optimize(store));
  EXPECT_EQ(optimized.files_removed, 2);
  EXPECT_EQ(optimized.files_added, 1);
  EXPECT_EQ(optimized.partitions_optimized, 1);
  // A partition predicate finds its files by the physical key; others are skipped.
  ASSERT_OK_AND_ASSIGN(auto deleted, DeleteRows(store, "network = 'base'"));
  EXPECT_EQ(deleted.rows_deleted, 10);
  EXPECT_EQ(deleted.files_removed, 1);
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store));
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 10; ++i) want.push_back(i);
  for (int64_t i = 20; i < 25; ++i) want.push_back(i);
  EXPECT_EQ(rows, want);
}

// Blocks with a list of structs, whose fields take physical names in the files.
std::shared_ptr<arrow::RecordBatch> CallsBatch() {
  auto calls_type =
      arrow::list(arrow::struct_({arrow::field("to", arrow::utf8()),
                                  arrow::field("value (wei)", arrow::int64(), false)}));
  auto blocks = *arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 2, 3]");
  auto calls = *arrow::json::ArrayFromJSONString(
      calls_type,
      R"j([[{"to": "a", "value (wei)": 5}], [], [{"to": "c", "value (wei)": 7}, null]])j");
  return arrow::RecordBatch::Make(
      arrow::schema(
          {arrow::field("block_num", arrow::int64()), arrow::field("calls", calls_type)}),
      3, {blocks, calls});
}

arrow::Result<std::shared_ptr<arrow::Table>> ReadAll(
    const std::shared_ptr<storage::ObjectStore>& store) {
  ARROW_ASSIGN_OR_RAISE(auto snapshot, Snapshot::Load(store));
  ARROW_ASSIGN_OR_RAISE(auto scan, TableScan::Make(snapshot, ScanOptions{}));
  ARROW_ASSIGN_OR_RAISE(auto table, scan->ToTable());
  return table->CombineChunks();
}

TEST(ColumnMappingTest, NestedValuesSurviveTheRewritesOfDeleteAndOptimize) {
  auto store = std::make_shared<storage::MemoryStore>();
  TableWriteOptions options;
  options.configuration = {{kColumnMappingModeKey, "name"}};
  ASSERT_OK(WriteBatches(store, {CallsBatch()}, options).status());
  ASSERT_OK(WriteBatches(store, {CallsBatch()->Slice(2, 1)}).status());
  ASSERT_OK(DeleteRows(store, "block_num = 2").status());  // rewrites the first file
  ASSERT_OK(Optimize(store).status());  // and merges it with the second
  ASSERT_OK_AND_ASSIGN(auto table, ReadAll(store));
  EXPECT_EQ(table->num_rows(), 3);
  const std::string calls = table->GetColumnByName("calls")->chunk(0)->ToString();
  EXPECT_NE(calls.find("\"a\""), std::string::npos) << calls;
  EXPECT_EQ(std::count(calls.begin(), calls.end(), '7'), 2) << calls;
}

TEST(ColumnMappingTest, IdModeReadsAColumnByItsFieldIdWhenItsPhysicalNameChanged) {
  for (const std::string mode : {"id", "name"}) {
    auto store = std::make_shared<storage::MemoryStore>();
    TableWriteOptions options;
    options.configuration = {{kColumnMappingModeKey, mode}};
    ASSERT_OK(WriteBatches(store, {CallsBatch()}, options).status());
    // Another engine's metadata names block_num's files differently, keeping its id.
    ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
    auto fields = snapshot->schema()->fields();
    auto metadata = fields[0]->metadata()->Copy();
    ASSERT_OK(metadata->Set("delta.columnMapping.physicalName", "\"renamed\""));
    fields[0] = fields[0]->WithMetadata(metadata);
    Metadata changed = snapshot->metadata();
    ASSERT_OK_AND_ASSIGN(changed.schema_string, SchemaToJson(*arrow::schema(fields)));
    Transaction txn(store, snapshot);
    txn.SetMetadata(changed);
    ASSERT_OK(txn.Commit().status());
    ASSERT_OK_AND_ASSIGN(auto table, ReadAll(store));
    // By id in `id` mode; by name (so null, as PROTOCOL.md says) in `name` mode.
    EXPECT_EQ(table->GetColumnByName("block_num")->null_count(), mode == "id" ? 0 : 3)
        << mode;
  }
}

TEST(ColumnMappingTest, AReplacedSchemaKeepsIdsOfKeptColumnsAndARestoreKeepsIdsGiven) {
  auto store = std::make_shared<storage::MemoryStore>();
  TableWriteOptions options;
  options.configuration = {{kColumnMappingModeKey, "name"}};
  ASSERT_OK(WriteBatches(store, {CallsBatch()}, options).status());
  ASSERT_OK_AND_ASSIGN(auto first, Snapshot::Load(store));
  const std::string block = PhysicalColumnName(*first->schema(), "block_num");
  // An overwrite replacing the schema: block_num keeps its physical name.
  auto gas = *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["x"])");
  auto replaced = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("block_num", arrow::int64()),
                     arrow::field("gas", arrow::utf8())}),
      1, {*arrow::json::ArrayFromJSONString(arrow::int64(), "[9]"), gas});
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  overwrite.overwrite_schema = true;
  ASSERT_OK(WriteBatches(store, {replaced}, overwrite).status());
  ASSERT_OK_AND_ASSIGN(auto second, Snapshot::Load(store));
  EXPECT_EQ(PhysicalColumnName(*second->schema(), "block_num"), block);
  EXPECT_EQ(second->metadata().configuration.at(kMaxColumnIdKey), "5");
  // Back to version 0 (max id 4), then a new column: id 6, never 5 again.
  ASSERT_OK(Restore(store, 0).status());
  ASSERT_OK_AND_ASSIGN(auto restored, Snapshot::Load(store));
  EXPECT_EQ(restored->metadata().configuration.at(kMaxColumnIdKey), "5");
  auto fees = *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["1", "2", "3"])");
  ASSERT_OK_AND_ASSIGN(
      auto more, CallsBatch()->AddColumn(2, arrow::field("fee", arrow::utf8()), fees));
  ASSERT_OK(WriteBatches(store, {more}).status());
  ASSERT_OK_AND_ASSIGN(auto grown, Snapshot::Load(store));
  const auto& fee = *grown->schema()->field(2);
  EXPECT_EQ(FieldMetadataValue(fee, "delta.columnMapping.id"), "6");
}

}  // namespace
}  // namespace ampdelta::delta
