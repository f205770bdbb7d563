#include "ampdelta/amp/query_text.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

TEST(QueryTextTest, AppendsStreamSettingOnce) {
  EXPECT_EQ(EnsureStreamingQuery("SELECT * FROM t;"),
            "SELECT * FROM t SETTINGS stream = true");
  const std::string once = EnsureStreamingQuery("SELECT * FROM t");
  EXPECT_EQ(EnsureStreamingQuery(once), once);
}

TEST(QueryTextTest, RecognisesExistingSettingInAnyCase) {
  EXPECT_TRUE(HasStreamSetting("select * from t settings STREAM=True"));
  EXPECT_TRUE(HasStreamSetting("SELECT * FROM t SETTINGS a = 1, stream = true ;"));
  EXPECT_FALSE(HasStreamSetting("SELECT * FROM t SETTINGS stream = false"));
  EXPECT_FALSE(HasStreamSetting("SELECT 'settings stream = true' FROM t"));
  EXPECT_FALSE(
      HasStreamSetting("SELECT * FROM (SELECT * FROM t SETTINGS stream = true) AS s"));
}

TEST(QueryTextTest, ExtendsAnExistingSettingsClause) {
  EXPECT_EQ(EnsureStreamingQuery("SELECT * FROM t SETTINGS a = 1"),
            "SELECT * FROM t SETTINGS a = 1, stream = true");
}

TEST(QueryTextTest, StreamSettingAfterATrailingCommentIsNotCommentedOut) {
  EXPECT_EQ(EnsureStreamingQuery("SELECT * FROM t -- every block\n"),
            "SELECT * FROM t SETTINGS stream = true");
  EXPECT_FALSE(HasStreamSetting("SELECT * FROM t -- SETTINGS stream = true"));
}

TEST(QueryTextTest, WithoutStreamSettingKeepsOtherSettings) {
  EXPECT_EQ(WithoutStreamSetting("SELECT * FROM t SETTINGS stream = true;"),
            "SELECT * FROM t");
  EXPECT_EQ(WithoutStreamSetting("SELECT * FROM t\nSETTINGS a = 1, stream = true"),
            "SELECT * FROM t SETTINGS a = 1");
  EXPECT_EQ(WithoutStreamSetting("SELECT 'SETTINGS stream = true' FROM t"),
            "SELECT 'SETTINGS stream = true' FROM t");
}

constexpr const char* kRange = "\"block_num\" >= 10 AND \"block_num\" <= 19";

std::string Filtered(const std::string& sql) {
  auto filtered = AddBlockFilter(sql, "block_num", 10, 19);
  return filtered.ok() ? *filtered : "error: " + filtered.status().message();
}

TEST(QueryTextTest, BlockFilterAddsAWhereBeforeOrderBy) {
  EXPECT_EQ(Filtered("SELECT * FROM \"acme/eth\".blocks ORDER BY block_num"),
            std::string("SELECT * FROM \"acme/eth\".blocks WHERE ") + kRange +
                " ORDER BY block_num");
  EXPECT_EQ(Filtered("SELECT * FROM t;"), std::string("SELECT * FROM t WHERE ") + kRange);
}

TEST(QueryTextTest, BlockFilterJoinsAnExistingWhereAcrossNewlines) {
  EXPECT_EQ(Filtered("SELECT *\nFROM t\nWHERE\n  gas_used > 0\nORDER\n BY block_num"),
            std::string("SELECT *\nFROM t\nWHERE\n  gas_used > 0 AND ") + kRange +
                "\nORDER\n BY block_num");
}

TEST(QueryTextTest, BlockFilterParenthesisesATopLevelOr) {
  EXPECT_EQ(Filtered("SELECT * FROM t WHERE a = 1 OR b = 2"),
            std::string("SELECT * FROM t WHERE ( a = 1 OR b = 2) AND ") + kRange);
  EXPECT_EQ(Filtered("SELECT * FROM t WHERE (a = 1 OR b = 2)"),
            std::string("SELECT * FROM t WHERE (a = 1 OR b = 2) AND ") + kRange);
}

TEST(QueryTextTest, BlockFilterGoesOnTheOuterQueryNotItsSubquery) {
  EXPECT_EQ(Filtered("SELECT * FROM (SELECT * FROM t WHERE x > 1 ORDER BY y) AS s"),
            std::string("SELECT * FROM (SELECT * FROM t WHERE x > 1 ORDER BY y) AS s "
                        "WHERE ") +
                kRange);
}

TEST(QueryTextTest, BlockFilterIgnoresKeywordsInCommentsAndStrings) {
  EXPECT_EQ(
      Filtered("SELECT 'WHERE x' AS w, block_num FROM t /* ORDER BY a */ -- LIMIT 1\n"
               "WHERE \"where\" = 'a''b' SETTINGS stream = true"),
      std::string("SELECT 'WHERE x' AS w, block_num FROM t /* ORDER BY a */ -- LIMIT 1\n"
                  "WHERE \"where\" = 'a''b' AND ") +
          kRange + " SETTINGS stream = true");
  // A trailing line comment does not swallow the filter.
  EXPECT_EQ(Filtered("SELECT * FROM t -- all of it"),
            std::string("SELECT * FROM t WHERE ") + kRange);
}

TEST(QueryTextTest, BlockFilterFiltersTheResultOfWhatAWhereWouldChange) {
  const std::string wrapped_tail = std::string("\n) WHERE ") + kRange;
  // Aggregates over every block, groups, DISTINCT, window functions, set operations and a
  // renamed block column: the filter applies to the query's result.
  for (const std::string sql : {
           "SELECT MIN(block_num) AS block_num, COUNT(*) AS n FROM t",
           "SELECT miner, COUNT(*) FROM t GROUP BY miner",
           "SELECT miner, COUNT(*) FROM t GROUP BY miner HAVING COUNT(*) > 1",
           "SELECT COUNT(*) AS n, block_num FROM t HAVING COUNT(*) > 1",
           "SELECT block_num, ROW_NUMBER() OVER (ORDER BY x) AS r FROM t",
           "SELECT * FROM a UNION ALL SELECT * FROM b",
           "SELECT number AS block_num FROM t",
       }) {
    EXPECT_EQ(Filtered(sql), "SELECT * FROM (" + sql + wrapped_tail) << sql;
  }
  // A trailing comment stays inside, SETTINGS outside.
  EXPECT_EQ(Filtered("SELECT miner FROM t GROUP BY miner -- per miner\nSETTINGS a = 1;"),
            "SELECT * FROM (SELECT miner FROM t GROUP BY miner" + wrapped_tail +
                " SETTINGS a = 1");
}

TEST(QueryTextTest, BlockFilterGoesBeforeAGroupByTheBlockColumnAndIntoDistinct) {
  EXPECT_EQ(Filtered("SELECT block_num, COUNT(*) AS n FROM t GROUP BY t.\"block_num\""),
            std::string("SELECT block_num, COUNT(*) AS n FROM t WHERE ") + kRange +
                " GROUP BY t.\"block_num\"");
  EXPECT_EQ(Filtered("SELECT BLOCK_NUM, COUNT(*) FROM t GROUP BY miner, BLOCK_NUM HAVING "
                     "COUNT(*) > 2"),
            std::string("SELECT BLOCK_NUM, COUNT(*) FROM t WHERE ") + kRange +
                " GROUP BY miner, BLOCK_NUM HAVING COUNT(*) > 2");
  EXPECT_EQ(Filtered("SELECT DISTINCT block_num, miner FROM t"),
            std::string("SELECT DISTINCT block_num, miner FROM t WHERE ") + kRange);
}

TEST(QueryTextTest, BlockFilterTakesAKeywordAfterAsForAnAlias) {
  EXPECT_EQ(
      Filtered("SELECT * FROM t AS window ORDER BY block_num"),
      std::string("SELECT * FROM t AS window WHERE ") + kRange + " ORDER BY block_num");
}

TEST(QueryTextTest, BlockFilterRefusesWhatNoBlockRangeCanSplit) {
  EXPECT_THAT(Filtered("SELECT * FROM t LIMIT 10"), ::testing::HasSubstr("LIMIT"));
  EXPECT_THAT(Filtered("SELECT * FROM t ORDER BY a\nOFFSET 5"),
              ::testing::HasSubstr("OFFSET"));
  EXPECT_THAT(Filtered("SELECT block_num FROM (SELECT * FROM t ORDER BY x LIMIT 10)"),
              ::testing::HasSubstr("LIMIT in a subquery"));
  EXPECT_THAT(Filtered("SELECT DISTINCT ON (type) type, block_num FROM t"),
              ::testing::HasSubstr("DISTINCT ON"));
  EXPECT_THAT(Filtered("SELECT * FROM t; SELECT 1"),
              ::testing::HasSubstr("more than one statement"));
  EXPECT_THAT(Filtered("SELECT * FROM t WHERE (a = 1"), ::testing::HasSubstr("unclosed"));
  EXPECT_THAT(Filtered("SELECT * FROM t WHERE a = 'x"),
              ::testing::HasSubstr("unterminated string"));
  EXPECT_THAT(Filtered("VALUES (1)"), ::testing::HasSubstr("no top-level SELECT"));
  EXPECT_THAT(Filtered("SELECT * FROM t WHERE ORDER BY a"),
              ::testing::HasSubstr("no condition"));
  EXPECT_THAT(Filtered("  ;"), ::testing::HasSubstr("empty"));
}

TEST(QueryTextTest, BlockFilterQuotesTheColumn) {
  auto filtered = AddBlockFilter("SELECT * FROM t", "we\"ird", 1, 2);
  ASSERT_OK(filtered.status());
  EXPECT_EQ(*filtered, "SELECT * FROM t WHERE \"we\"\"ird\" >= 1 AND \"we\"\"ird\" <= 2");
}

}  // namespace
}  // namespace ampdelta::amp
