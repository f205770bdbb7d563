#include "ampdelta/delta/write/write_plan.h"

#include <arrow/buffer.h>
#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/type_widening.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

Protocol Legacy(int reader, int writer) {
  Protocol protocol;
  protocol.min_reader_version = reader;
  protocol.min_writer_version = writer;
  return protocol;
}

Protocol Features(std::vector<std::string> reader, std::vector<std::string> writer) {
  Protocol protocol;
  protocol.min_reader_version = 3;
  protocol.min_writer_version = 7;
  protocol.reader_features = std::move(reader);
  protocol.writer_features = std::move(writer);
  return protocol;
}

TEST(CombineProtocolsTest, ATableNeverLosesAFeatureItHad) {
  struct Case {
    Protocol existing;
    Protocol required;
    Protocol combined;
  };
  const Case cases[] = {
      {Legacy(1, 2), Legacy(1, 2), Legacy(1, 2)},
      {Legacy(1, 4), Legacy(1, 2), Legacy(1, 4)},
      {Legacy(2, 5), Legacy(1, 2), Legacy(2, 5)},
      // The downgrade this fixes: a replaced schema needing timestampNtz dropped DVs.
      {Features({"deletionVectors"}, {"deletionVectors"}),
       Features({"timestampNtz"}, {"timestampNtz"}),
       Features({"deletionVectors", "timestampNtz"},
                {"deletionVectors", "timestampNtz"})},
      // A legacy table moving to table features lists what its versions implied.
      {Legacy(1, 3), Features({"timestampNtz"}, {"timestampNtz"}),
       Features({"timestampNtz"},
                {"appendOnly", "invariants", "checkConstraints", "timestampNtz"})},
      {Legacy(2, 5), Features({"timestampNtz"}, {"timestampNtz"}),
       Features({"columnMapping", "timestampNtz"},
                {"appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                 "generatedColumns", "columnMapping", "timestampNtz"})},
      // Legacy reader version 2 is column mapping: a reader feature, so a writer one too.
      {Features({}, {"appendOnly"}), Features({"timestampNtz"}, {"timestampNtz"}),
       Features({"timestampNtz"}, {"appendOnly", "timestampNtz"})},
      {[] {
         Protocol p;
         p.min_reader_version = 2;
         p.min_writer_version = 7;
         p.writer_features = std::vector<std::string>{"appendOnly"};
         return p;
       }(),
       Features({"timestampNtz"}, {"timestampNtz"}),
       Features({"columnMapping", "timestampNtz"},
                {"appendOnly", "timestampNtz", "columnMapping"})},
      // A legacy requirement (a new table's default) adds nothing to a features table.
      {Features({"deletionVectors"}, {"deletionVectors"}), Legacy(1, 2),
       Features({"deletionVectors"}, {"deletionVectors"})},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(CombineProtocols(c.existing, c.required), c.combined)
        << c.existing.min_reader_version << "," << c.existing.min_writer_version;
  }
}

class WritePlanTest : public ::testing::Test {
 protected:
  void CreateTable(const std::string& protocol_json) {
    const std::string commit =
        R"({"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}})"
        "\n" +
        protocol_json + "\n" +
        R"({"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}})"
        "\n";
    ASSERT_OK(store_->Put("_delta_log/00000000000000000000.json",
                          arrow::Buffer::FromString(commit),
                          storage::PutMode::kCreateIfAbsent));
  }

  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(WritePlanTest, AnOverwriteThatReplacesTheSchemaKeepsTheTablesFeatures) {
  CreateTable(
      R"({"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}})");
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  TableWriteOptions options;
  options.mode = SaveMode::kOverwrite;
  options.overwrite_schema = true;
  // A string where the table has a long, and a timestamp without time zone.
  auto incoming =
      arrow::schema({arrow::field("a", arrow::utf8()),
                     arrow::field("t", arrow::timestamp(arrow::TimeUnit::MICRO))});
  ASSERT_OK_AND_ASSIGN(auto plan,
                       PlanWrite(snapshot.get(), *incoming, options, store_->root_uri()));
  ASSERT_TRUE(plan.new_protocol.has_value());
  // The new schema's features come as a new table's do: with what writer version 2
  // implied (appendOnly, invariants), as Spark lists them.
  EXPECT_EQ(*plan.new_protocol,
            Features({"deletionVectors", "timestampNtz"},
                     {"deletionVectors", "appendOnly", "invariants", "timestampNtz"}));
  ASSERT_TRUE(plan.new_metadata.has_value());
  EXPECT_EQ(plan.new_metadata->id, "x");  // the same table
  EXPECT_EQ(plan.table_schema->field(0)->type()->id(), arrow::Type::STRING);
}

TEST_F(WritePlanTest, SchemaEvolutionWidensATypeOnlyWhereTheTableAllowsIt) {
  for (const bool enabled : {true, false}) {
    SCOPED_TRACE(enabled ? "typeWidening enabled" : "not enabled");
    auto store = std::make_shared<storage::MemoryStore>();
    const std::string commit =
        std::string(
            R"({"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["typeWidening"],"writerFeatures":["typeWidening"]}})"
            "\n") +
        R"({"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}},{\"name\":\"f\",\"type\":\"float\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{"delta.enableTypeWidening":")" +
        (enabled ? "true" : "false") + R"("},"createdTime":1}})" + "\n";
    ASSERT_OK(store->Put("_delta_log/00000000000000000000.json",
                         arrow::Buffer::FromString(commit),
                         storage::PutMode::kCreateIfAbsent));
    ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
    // A long where the table has an int (written value by value unless widened), and a
    // double where it has a float (refused unless widened).
    auto incoming = arrow::schema(
        {arrow::field("a", arrow::int64()), arrow::field("f", arrow::float64())});
    auto fitting = arrow::schema(
        {arrow::field("a", arrow::int64()), arrow::field("f", arrow::float32())});
    TableWriteOptions options;
    if (!enabled) {
      EXPECT_THAT(PlanWrite(snapshot.get(), *incoming, options, "t"),
                  testing::StatusHasMessage("column types differ"));
      ASSERT_OK_AND_ASSIGN(auto plan, PlanWrite(snapshot.get(), *fitting, options, "t"));
      EXPECT_FALSE(plan.new_metadata.has_value());
      continue;
    }
    ASSERT_OK_AND_ASSIGN(auto plan, PlanWrite(snapshot.get(), *incoming, options, "t"));
    ASSERT_TRUE(plan.new_metadata.has_value());
    EXPECT_EQ(plan.table_schema->field(0)->type()->id(), arrow::Type::INT64);
    EXPECT_EQ(plan.table_schema->field(1)->type()->id(), arrow::Type::DOUBLE);
    EXPECT_NE(plan.new_metadata->schema_string.find(
                  R"("delta.typeChanges":[{"fromType":"integer","toType":"long"}])"),
              std::string::npos)
        << plan.new_metadata->schema_string;
    // Without schema merging nothing widens.
    options.merge_schema = false;
    ASSERT_OK_AND_ASSIGN(auto kept, PlanWrite(snapshot.get(), *fitting, options, "t"));
    EXPECT_FALSE(kept.new_metadata.has_value());
  }
}

TEST(TypeWideningTest, AStructWidensWhereItsFieldsDoAndNowhereElse) {
  auto column = arrow::field("s", arrow::struct_({arrow::field("a", arrow::int32()),
                                                  arrow::field("b", arrow::utf8())}));
  ASSERT_OK_AND_ASSIGN(
      auto wider, WidenedFor(column, arrow::struct_({arrow::field("a", arrow::int64()),
                                                     arrow::field("b", arrow::utf8())})));
  ASSERT_NE(wider, nullptr);
  const auto& a = *wider->type()->field(0);
  EXPECT_EQ(a.type()->id(), arrow::Type::INT64);
  EXPECT_EQ(FieldMetadataValue(a, "delta.typeChanges"),
            R"([{"fromType":"integer","toType":"long"}])");
  EXPECT_FALSE(WasWidened(*wider->type()->field(1)));
  // Another field name, a narrower field, or nothing wider: not a widening.
  for (const auto& data : {arrow::struct_({arrow::field("c", arrow::int64()),
                                           arrow::field("b", arrow::utf8())}),
                           arrow::struct_({arrow::field("a", arrow::int8()),
                                           arrow::field("b", arrow::utf8())}),
                           arrow::struct_({arrow::field("a", arrow::int32()),
                                           arrow::field("b", arrow::utf8())})}) {
    ASSERT_OK_AND_ASSIGN(auto none, WidenedFor(column, data));
    EXPECT_EQ(none, nullptr) << data->ToString();
  }
}

TEST(TypeWideningTest, ColumnsThatExpressionsMentionAreFoundInAnyCaseOrQuoting) {
  auto schema = arrow::schema(
      {arrow::field("Day", arrow::date32())
           ->WithMetadata(arrow::key_value_metadata(
               {"delta.generationExpression"}, {R"x("CAST(`Block Time` AS DATE)")x"}))});
  const auto names = ColumnsExpressionsUse(
      *schema, {{"delta.constraints.positive", "Gas_Used > 0"}, {"other", "x"}});
  EXPECT_EQ(names.count("block time"), 1u);
  EXPECT_EQ(names.count("gas_used"), 1u);
  EXPECT_EQ(names.count("x"), 0u);
}

TEST_F(WritePlanTest, PlansFollowTheModeWithoutTouchingTheStore) {
  CreateTable(R"({"protocol":{"minReaderVersion":1,"minWriterVersion":2}})");
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  auto incoming = arrow::schema(
      {arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8())});
  TableWriteOptions options;
  options.mode = SaveMode::kIgnore;
  ASSERT_OK_AND_ASSIGN(auto ignored, PlanWrite(snapshot.get(), *incoming, options, "t"));
  EXPECT_TRUE(ignored.skipped);
  options.mode = SaveMode::kErrorIfExists;
  EXPECT_THAT(PlanWrite(snapshot.get(), *incoming, options, "memory://t"),
              testing::StatusHasMessage("table already exists at memory://t"));
  options.mode = SaveMode::kAppend;
  ASSERT_OK_AND_ASSIGN(auto merged, PlanWrite(snapshot.get(), *incoming, options, "t"));
  ASSERT_TRUE(merged.new_metadata.has_value());  // column b is added
  EXPECT_EQ(merged.table_schema->num_fields(), 2);
  EXPECT_FALSE(merged.new_protocol.has_value());
  options.partition_by = {"B"};
  EXPECT_THAT(PlanWrite(snapshot.get(), *incoming, options, "t"),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  ASSERT_OK_AND_ASSIGN(auto fresh, PlanWrite(nullptr, *incoming, options, "t"));
  EXPECT_EQ(fresh.partition_columns, (std::vector<std::string>{"b"}));
  EXPECT_EQ(*fresh.new_protocol, Legacy(1, 2));
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("", ""));
  EXPECT_EQ(objects.size(), 1u);  // planning wrote nothing
}

}  // namespace
}  // namespace ampdelta::delta
