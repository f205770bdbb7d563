#include "ampdelta/devserver/sql.h"

#include "tests/support/test_util.h"

namespace ampdelta::devserver::sql {
namespace {

TEST(SqlTest, ParsesTheQuickstartQuery) {
  ASSERT_OK_AND_ASSIGN(
      SelectStatement statement,
      Parse(
          R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)"));
  ASSERT_EQ(statement.items.size(), 4u);
  EXPECT_EQ(statement.items[0].column, "block_num");
  EXPECT_EQ(statement.items[3].column, "gas_used");
  const auto& table = std::get<TableName>(statement.from);
  EXPECT_EQ(table.dataset, "acme/eth_mainnet");
  EXPECT_EQ(table.table, "blocks");
  EXPECT_FALSE(statement.streaming());
}

TEST(SqlTest, ParsesStarWhereBetweenLimitAndSettings) {
  ASSERT_OK_AND_ASSIGN(
      SelectStatement statement,
      Parse("select * from eth_rpc.logs where block_num between 10 and 20 and "
            "log_index >= 2 and address = x'00ff' limit 5 SETTINGS stream = TRUE;"));
  EXPECT_EQ(statement.items[0].kind, SelectItem::Kind::kStar);
  ASSERT_EQ(statement.where.size(), 4u);
  EXPECT_EQ(statement.where[0].op, CompareOp::kGe);
  EXPECT_EQ(statement.where[0].value.text, "10");
  EXPECT_EQ(statement.where[1].op, CompareOp::kLe);
  EXPECT_EQ(statement.where[2].column, "log_index");
  EXPECT_EQ(statement.where[3].value.kind, Literal::Kind::kHexBytes);
  EXPECT_EQ(statement.where[3].value.text, std::string("\x00\xff", 2));
  EXPECT_EQ(statement.limit, std::optional<uint64_t>(5));
  EXPECT_TRUE(statement.streaming());
}

TEST(SqlTest, ParsesAggregatesWithAliases) {
  ASSERT_OK_AND_ASSIGN(
      SelectStatement statement,
      Parse("SELECT MAX(block_num) as max_block, min(b.block_num), COUNT(*) "
            "FROM \"acme/eth_mainnet\".blocks b"));
  ASSERT_EQ(statement.items.size(), 3u);
  EXPECT_EQ(statement.items[0].kind, SelectItem::Kind::kAggregate);
  EXPECT_EQ(statement.items[0].function, AggregateFn::kMax);
  EXPECT_EQ(statement.items[0].alias, "max_block");
  EXPECT_EQ(statement.items[1].function, AggregateFn::kMin);
  EXPECT_EQ(statement.items[2].function, AggregateFn::kCount);
  EXPECT_TRUE(statement.items[2].column.empty());
  EXPECT_EQ(statement.from_alias, "b");
}

TEST(SqlTest, ParsesSubqueryInFrom) {
  ASSERT_OK_AND_ASSIGN(
      SelectStatement statement,
      Parse("SELECT s.block_num FROM (SELECT block_num, gas_used FROM x.blocks WHERE "
            "gas_used > 5) AS s WHERE block_num < 100 SETTINGS stream = true"));
  ASSERT_TRUE(std::holds_alternative<std::shared_ptr<SelectStatement>>(statement.from));
  const auto& inner = *std::get<std::shared_ptr<SelectStatement>>(statement.from);
  EXPECT_EQ(inner.items.size(), 2u);
  EXPECT_EQ(inner.where[0].column, "gas_used");
  EXPECT_EQ(statement.where[0].column, "block_num");
  EXPECT_TRUE(statement.streaming());
}

TEST(SqlTest, QuotedIdentifiersKeepCaseAndReservedWords) {
  ASSERT_OK_AND_ASSIGN(SelectStatement statement,
                       Parse(R"(SELECT "from", "to", Hash FROM d.transactions)"));
  EXPECT_EQ(statement.items[0].column, "from");
  EXPECT_EQ(statement.items[1].column, "to");
  EXPECT_EQ(statement.items[2].column, "hash");
}

TEST(SqlTest, ParsesGroupByDistinctAndDistinctOn) {
  ASSERT_OK_AND_ASSIGN(SelectStatement grouped,
                       Parse("SELECT _block_num, COUNT(*) AS n FROM d.t WHERE a > 1 "
                             "GROUP BY _block_num, t.Kind LIMIT 5"));
  EXPECT_EQ(grouped.group_by, (std::vector<std::string>{"_block_num", "kind"}));
  EXPECT_EQ(grouped.limit, std::optional<uint64_t>(5));
  EXPECT_FALSE(grouped.distinct);
  ASSERT_OK_AND_ASSIGN(SelectStatement on,
                       Parse("SELECT DISTINCT ON (_block_num, \"From\") * FROM d.t"));
  EXPECT_EQ(on.distinct_on, (std::vector<std::string>{"_block_num", "From"}));
  ASSERT_OK_AND_ASSIGN(SelectStatement distinct, Parse("SELECT DISTINCT a, b FROM d.t"));
  EXPECT_TRUE(distinct.distinct);
  EXPECT_TRUE(distinct.distinct_on.empty());
  EXPECT_THAT(Parse("SELECT a FROM d.t GROUP BY"),
              testing::StatusHasMessage("expected a column name"));
  EXPECT_THAT(Parse("SELECT DISTINCT ON () a FROM d.t"),
              testing::StatusHasMessage("expected a column name, found ')'"));
}

TEST(SqlTest, RejectsUnsupportedConstructsByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"SELECT * FROM d.t ORDER BY block_num", "ORDER BY"},
      {"SELECT a FROM d.t GROUP BY a HAVING a > 1", "HAVING"},
      {"SELECT COUNT(DISTINCT a) FROM d.t", "DISTINCT"},
      {"SELECT * FROM d.t JOIN d.u ON a = b", "JOIN"},
      {"SELECT * FROM d.t, d.u", "JOIN"},
      {"SELECT * FROM d.t WHERE a = 1 OR b = 2", "OR"},
      {"SELECT DISTINCT ON a FROM d.t", "unexpected 'a'"},
      {"SELECT * FROM d.t UNION SELECT * FROM d.u", "UNION"},
      {"WITH x AS (SELECT 1) SELECT * FROM x", "WITH"},
      {"SELECT sum(a) FROM d.t", "function SUM()"},
      {"SELECT a + 1 FROM d.t", "arithmetic"},
      {"SELECT * FROM d.t WHERE a IN (1, 2)", "IN"},
      {"SELECT * FROM d.t WHERE a IS NULL", "IS"},
      {"SELECT * FROM d.t WHERE a = b", "comparison between columns"},
      {"SELECT a", "SELECT without FROM"},
      {"SELECT 1 FROM d.t", "literal in select list"},
  };
  for (const auto& [sql, construct] : cases) {
    auto result = Parse(sql);
    EXPECT_THAT(result, testing::StatusHasMessage("invalid query:")) << sql;
    EXPECT_THAT(result, testing::StatusHasMessage(construct)) << sql;
    EXPECT_EQ(result.status().code(), arrow::StatusCode::Invalid) << sql;
  }
}

TEST(SqlTest, RejectsMalformedQueries) {
  EXPECT_THAT(Parse(""), testing::StatusHasMessage("query is empty"));
  EXPECT_THAT(Parse("SELECT a FROM"), testing::StatusHasMessage("expected a table name"));
  EXPECT_THAT(Parse("SELECT a FROM blocks"),
              testing::StatusHasMessage("<dataset>.<table>"));
  EXPECT_THAT(Parse("SELECT a FROM d.t WHERE a = 'x"),
              testing::StatusHasMessage("unterminated string"));
  EXPECT_THAT(Parse("SELECT a FROM d.t LIMIT x"),
              testing::StatusHasMessage("LIMIT needs"));
  EXPECT_THAT(Parse("SELECT z.a FROM d.t AS b"),
              testing::StatusHasMessage("qualifier 'z'"));
  EXPECT_THAT(Parse("SELECT * FROM (SELECT * FROM d.t SETTINGS stream = true) s"),
              testing::StatusHasMessage("outermost"));
}

// Hostile SQL: a client can send any text; each must be an "invalid query" error.

TEST(SqlTest, HugeLimitIsAnErrorNotAnException) {
  EXPECT_THAT(Parse("SELECT * FROM d.t LIMIT 99999999999999999999"),
              testing::StatusHasMessage("LIMIT 99999999999999999999 is out of range"));
  ASSERT_OK_AND_ASSIGN(auto largest,
                       Parse("SELECT * FROM d.t LIMIT 18446744073709551615"));
  EXPECT_EQ(largest.limit, std::optional<uint64_t>(UINT64_MAX));
}

TEST(SqlTest, NumbersWithTwoPointsAreMalformed) {
  EXPECT_THAT(Parse("SELECT * FROM d.t WHERE a = 1.2.3"),
              testing::StatusHasMessage("malformed number near '1.2.'"));
  EXPECT_THAT(Parse("SELECT * FROM d.t WHERE a = 1..2"),
              testing::StatusHasMessage("malformed number"));
}

TEST(SqlTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string conditions = "SELECT * FROM d.t WHERE " + std::string(100000, '(') +
                                 "a = 1" + std::string(100000, ')');
  EXPECT_THAT(Parse(conditions),
              testing::StatusHasMessage("nests deeper than 64 levels"));
  std::string subqueries = "SELECT * FROM d.t";
  for (int i = 0; i < 100; ++i) subqueries = "SELECT * FROM (" + subqueries + ")";
  EXPECT_THAT(Parse(subqueries),
              testing::StatusHasMessage("nests deeper than 64 levels"));
  // Siblings do not add up: only depth counts.
  std::string wide = "SELECT * FROM d.t WHERE (a = 1)";
  for (int i = 0; i < 100; ++i) wide += " AND (a = 1)";
  EXPECT_OK(Parse(wide).status());
  EXPECT_OK(Parse("SELECT * FROM (SELECT * FROM (SELECT * FROM d.t)) WHERE ((a = 1))")
                .status());
}

TEST(SqlTest, TruncatedEmptyAndBinaryQueriesAreInvalid) {
  const std::string text =
      "SELECT block_num AS b, MAX(gas_used) FROM \"acme/eth_mainnet\".blocks WHERE "
      "block_num "
      "BETWEEN 1 AND 5 AND hash = x'00ff' LIMIT 3 SETTINGS stream = true";
  ASSERT_OK(Parse(text).status());
  for (size_t length = 0; length + 1 < text.size(); ++length) {
    auto parsed = Parse(text.substr(0, length));
    if (!parsed.ok()) {
      EXPECT_THAT(parsed, testing::StatusHasMessage("invalid query")) << length;
    }
  }
  for (const std::string& bad :
       {std::string(), std::string(" "), std::string("\0", 1),
        std::string("SELECT \xff FROM d.t"), std::string("'"), std::string("x'0")}) {
    EXPECT_THAT(Parse(bad), testing::StatusHasMessage("invalid query")) << bad;
  }
}

}  // namespace
}  // namespace ampdelta::devserver::sql
