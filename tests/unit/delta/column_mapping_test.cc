#include "ampdelta/delta/log/column_mapping.h"

#include <arrow/array.h>
#include <arrow/json/from_string.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
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

}  // namespace
}  // namespace ampdelta::delta
