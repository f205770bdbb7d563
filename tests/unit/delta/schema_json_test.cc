// Hostile schemaString input: every malformed schema is an error, never an exception.

#include "ampdelta/delta/log/schema_json.h"

#include <string>
#include <utility>

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>

#include "ampdelta/delta/log/schema.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

std::string Struct(const std::string& fields) {
  return R"({"type":"struct","fields":[)" + fields + "]}";
}

std::string Field(const std::string& name, const std::string& type,
                  const std::string& rest = "") {
  return R"({"name":")" + name + R"(","type":)" + type + rest + "}";
}

TEST(SchemaJsonTest, WrongTypedFieldIsAnErrorNotAnException) {
  const std::pair<std::string, const char*> cases[] = {
      {Struct(Field("a", R"("long")", R"(,"nullable":"yes")")), "'nullable' of a field"},
      {Struct(Field("a", R"("long")", R"(,"nullable":1)")), "'nullable' of a field"},
      {Struct(Field("a", R"({"type":"array","elementType":"long","containsNull":"no"})")),
       "'containsNull' of an array"},
      {Struct(Field("a", R"({"type":"map","keyType":"string","valueType":"long",)"
                         R"("valueContainsNull":[]})")),
       "'valueContainsNull' of a map"},
      {R"({"type":5,"fields":[]})", "schemaString is not a struct"},
      {R"({"type":"struct","fields":{}})", "schemaString is not a struct"},
      {R"({"type":"struct"})", "schemaString is not a struct"},
      {Struct(R"({"name":1,"type":"long"})"), "field without name/type"},
      {Struct(R"({"name":"a"})"), "field without name/type"},
      {Struct(R"("a")"), "field without name/type"},
      {Struct(Field("a", "7")), "bad type: 7"},
      {Struct(Field("a", R"({"type":["struct"]})")), "bad type"},
      {Struct(Field("a", R"({"type":"struct","fields":"x"})")), "struct without fields"},
      {Struct(Field("a", R"({"type":"array"})")), "array without elementType"},
      {Struct(Field("a", R"({"type":"map","keyType":"long"})")), "map without keyType"},
      {Struct(Field("a", R"({"type":"udt"})")), "unknown complex type 'udt'"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_THAT(SchemaFromJson(text), testing::StatusHasMessage(message)) << text;
    EXPECT_THAT(SchemaFromJson(text), testing::HasErrorCode(ErrorCode::kCorruptLog))
        << text;
  }
}

TEST(SchemaJsonTest, TruncatedSchemaIsAnErrorAtEveryLength) {
  const std::string text = Struct(
      Field("a", "\"decimal(10,2)\"",
            R"(,"nullable":false,"metadata":{"k":[1,{"x":"y"}]})") +
      "," +
      Field("b",
            R"({"type":"map","keyType":"string","valueType":{"type":"array",)"
            R"("elementType":"long","containsNull":true},"valueContainsNull":false})"));
  ASSERT_OK(SchemaFromJson(text).status());
  for (size_t length = 0; length < text.size(); ++length) {
    EXPECT_FALSE(SchemaFromJson(text.substr(0, length)).ok()) << length;
  }
}

TEST(SchemaJsonTest, EmptyAndNonJsonInputIsAnError) {
  for (const std::string text :
       {"", " ", "null", "[]", "{}", "\"struct\"", "{\"type\":\"\"}"}) {
    EXPECT_THAT(SchemaFromJson(text), testing::HasErrorCode(ErrorCode::kCorruptLog))
        << text;
  }
  // An empty column name reads (Delta allows it in logs); writing refuses it.
  EXPECT_OK(SchemaFromJson(Struct(Field("", R"("long")"))).status());
}

TEST(SchemaJsonTest, NonUtf8BytesAreAnError) {
  EXPECT_THAT(SchemaFromJson(Struct(Field("a\xff", R"("long")"))),
              testing::StatusHasMessage("schemaString is not JSON"));
  // Arrow field names and metadata need not be UTF-8; the Delta schema must be.
  EXPECT_THAT(SchemaToJson(*arrow::schema({arrow::field("b\xc3", arrow::int64())})),
              testing::StatusHasMessage("is not valid UTF-8 at fields[0].name"));
  auto metadata = arrow::key_value_metadata({"comment"}, {"\xfe"});
  EXPECT_THAT(
      SchemaToJson(*arrow::schema({arrow::field("c", arrow::int64(), true, metadata)})),
      testing::StatusHasMessage("at fields[0].metadata.comment"));
}

TEST(SchemaJsonTest, HugeNumbersInDecimalTypesAreAnError) {
  for (const std::string type :
       {"decimal(99999999999999999999,1)", "decimal(2147483648,0)", "decimal(39,0)",
        "decimal(10,11)", "decimal(-1,0)", "decimal(10,-1)", "decimal(10)", "decimal()",
        "decimal(10,2)x", "decimal(1.5,1)", "decimal(", "decimal(,)"}) {
    EXPECT_FALSE(SchemaFromJson(Struct(Field("d", "\"" + type + "\""))).ok()) << type;
  }
  ASSERT_OK_AND_ASSIGN(auto spaced,
                       SchemaFromJson(Struct(Field("d", "\"decimal( 38 , 0 )\""))));
  EXPECT_TRUE(spaced->field(0)->type()->Equals(arrow::decimal128(38, 0)));
  ASSERT_OK_AND_ASSIGN(auto plain, SchemaFromJson(Struct(Field("d", R"("decimal")"))));
  EXPECT_TRUE(plain->field(0)->type()->Equals(arrow::decimal128(10, 0)));
}

TEST(SchemaJsonTest, DeepNestingIsAnErrorNotAStackOverflow) {
  auto nested = [](int depth) {
    std::string type = R"("long")";
    for (int i = 0; i < depth; ++i)
      type = R"({"type":"array","elementType":)" + type + "}";
    return Struct(Field("a", type));
  };
  EXPECT_THAT(SchemaFromJson(nested(5000)),
              testing::StatusHasMessage("nests deeper than"));
  // Within the limit every level is read and written back.
  ASSERT_OK_AND_ASSIGN(auto deep, SchemaFromJson(nested(400)));
  ASSERT_OK_AND_ASSIGN(auto text, SchemaToJson(*deep));
  ASSERT_OK_AND_ASSIGN(auto again, SchemaFromJson(text));
  EXPECT_TRUE(again->Equals(*deep));
}

}  // namespace
}  // namespace ampdelta::delta
