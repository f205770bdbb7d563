#include <string>

#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"
#include "tests/support/test_util.h"

namespace ampdelta::json_util {
namespace {

using nlohmann::json;

TEST(JsonUtilTest, ParseNeverThrowsOnHostileText) {
  for (const std::string text :
       {"", "{", "{\"a\":", "[1,2", "nul", "\"\xff\"", "\"\\ud800\"", "1e400",
        "{\"a\":1}}", "\"unterminated"}) {
    EXPECT_TRUE(ParseJson(text).is_discarded()) << text;
  }
  EXPECT_EQ(ParseJson("{\"a\":[1]}")["a"][0], 1);
}

TEST(JsonUtilTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_FALSE(JsonNestingWithin(deep));
  EXPECT_TRUE(ParseJson(deep).is_discarded());
  const std::string limit =
      std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_FALSE(ParseJson(limit).is_discarded());
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_TRUE(JsonNestingWithin("[\"" + std::string(5000, '[') + "\\\"" + "\"]"));
  EXPECT_FALSE(ParseJson<nlohmann::ordered_json>(deep).is_object());
}

TEST(JsonUtilTest, DumpNamesTheStringThatIsNotUtf8) {
  json value = {{"add", {{"path", "ok"}, {"partitionValues", {{"x", "\xc3"}}}}}};
  EXPECT_THAT(DumpJson(value, "add action"),
              testing::StatusHasMessage(
                  "add action is not valid UTF-8 at add.partitionValues.x"));
  EXPECT_THAT(DumpJson(value, "add action"),
              testing::HasErrorCode(ErrorCode::kInvalidInput));
  json key = {{"k\xff", 1}};
  EXPECT_THAT(DumpJson(key, "tags"), testing::StatusHasMessage("at the key k\\xFF"));
  json list = json::array({"a", json::array({"b", "\x80"})});
  EXPECT_THAT(DumpJson(list, "list"), testing::StatusHasMessage("at [1][1]"));
  EXPECT_THAT(DumpJson(json("\xfe"), "text"),
              testing::StatusHasMessage("the top-level string"));
  ASSERT_OK_AND_ASSIGN(auto text, DumpJson(json{{"a", "caf\xc3\xa9"}}, "ok"));
  EXPECT_EQ(text, "{\"a\":\"caf\xc3\xa9\"}");
}

TEST(JsonUtilTest, LossyDumpReplacesBadBytesInsteadOfThrowing) {
  EXPECT_EQ(DumpJsonLossy(json("a\xff")), "\"a\xef\xbf\xbd\"");
  EXPECT_EQ(DumpJsonLossy(json{{"\xfe", 1}}), "{\"\xef\xbf\xbd\":1}");
}

TEST(JsonUtilTest, TypedReadsRefuseWrongTypesAndRanges) {
  const json doc = json::parse(R"({"b":true,"s":"x","n":null,"big":18446744073709551615,)"
                               R"("neg":-1,"max":9223372036854775807,"f":1.5})");
  EXPECT_EQ(BoolOr(doc, "b", false), std::optional<bool>(true));
  EXPECT_EQ(BoolOr(doc, "missing", true), std::optional<bool>(true));
  EXPECT_EQ(BoolOr(doc, "n", false), std::optional<bool>(false));
  EXPECT_EQ(BoolOr(doc, "s", true), std::nullopt);
  EXPECT_EQ(BoolOr(json::array(), "b", true), std::nullopt);
  EXPECT_EQ(AsInt64(doc["big"]), std::nullopt);
  EXPECT_EQ(AsInt64(doc["max"]), std::optional<int64_t>(INT64_MAX));
  EXPECT_EQ(AsInt64(doc["neg"]), std::optional<int64_t>(-1));
  EXPECT_EQ(AsInt64(doc["f"]), std::nullopt);
  EXPECT_EQ(AsInt64(doc["s"]), std::nullopt);
  EXPECT_EQ(AsUint64(doc["big"]), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(AsUint64(doc["neg"]), std::nullopt);
}

}  // namespace
}  // namespace ampdelta::json_util
