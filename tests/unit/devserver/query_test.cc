#include "ampdelta/devserver/query.h"

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/table.h>

#include "ampdelta/devserver/chain_shape.h"
#include "ampdelta/devserver/functions.h"
#include "ampdelta/devserver/synthetic_chain.h"
#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override { UseChain(20); }

  void UseChain(uint64_t blocks) {
    SyntheticChainOptions options;
    options.initial_blocks = blocks;
    chain_ = std::make_shared<SyntheticChain>(options);
    catalog_ = Catalog();
    catalog_.Add(chain_);
  }

  arrow::Result<std::shared_ptr<const BoundQuery>> Bind(const std::string& text) {
    ARROW_ASSIGN_OR_RAISE(auto statement, sql::Parse(text));
    return BoundQuery::Bind(statement, catalog_);
  }

  // Run a bound query over the whole chain and return its rows as one batch.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Run(const std::string& text) {
    ARROW_ASSIGN_OR_RAISE(auto query, Bind(text));
    ARROW_ASSIGN_OR_RAISE(auto iterator, chain_->Scan(query->table(), *chain_->Synced()));
    BoundQuery::Aggregator aggregator(query.get());
    std::vector<std::shared_ptr<arrow::RecordBatch>> out;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto batch, iterator->Next());
      if (batch == nullptr) break;
      ARROW_ASSIGN_OR_RAISE(auto transformed, query->Transform(batch));
      if (query->is_aggregate()) {
        ARROW_RETURN_NOT_OK(aggregator.Consume(transformed));
      } else {
        out.push_back(transformed);
      }
    }
    if (query->is_aggregate()) return aggregator.Finish();
    if (query->is_grouped()) return query->Group(out);
    ARROW_ASSIGN_OR_RAISE(auto table,
                          arrow::Table::FromRecordBatches(query->output_schema(), out));
    return table->CombineChunksToBatch();
  }

  std::shared_ptr<SyntheticChain> chain_;
  Catalog catalog_;
};

// What a batch scan may skip: only filters on the source's block number, through every
// stage that passes it on.
TEST_F(QueryTest, BlockBoundsComeFromBlockNumberFiltersThroughSubqueries) {
  using Bounds = std::optional<std::pair<uint64_t, uint64_t>>;
  auto bounds = [this](const std::string& text) -> Bounds {
    auto query = Bind(text);
    EXPECT_OK(query.status());
    if (!query.ok()) return std::nullopt;
    auto found = (*query)->BlockBounds();
    EXPECT_OK(found.status());
    return found.ok() ? *found : std::nullopt;
  };
  const std::string blocks = R"("acme/eth_mainnet".blocks)";
  const std::string txs = R"("acme/eth_mainnet".transactions)";
  EXPECT_EQ(bounds("SELECT * FROM " + blocks), Bounds());
  EXPECT_EQ(bounds("SELECT * FROM " + blocks + " WHERE gas_used > 5"), Bounds());
  EXPECT_EQ(bounds("SELECT * FROM (SELECT block_num, hash FROM " + blocks +
                   " WHERE block_num >= 24000003) WHERE \"block_num\" < 24000010"),
            Bounds({24000003, 24000009}));
  EXPECT_EQ(bounds("SELECT * FROM " + txs +
                   " WHERE _block_num BETWEEN 24000001 AND "
                   "24000002 AND block_num > 24000001"),
            Bounds({24000002, 24000002}));
  // An alias hides the source column from the outer filter.
  EXPECT_EQ(bounds("SELECT * FROM (SELECT gas_used AS block_num FROM " + blocks +
                   ") WHERE block_num = 7"),
            Bounds());
  const auto none = bounds("SELECT * FROM " + blocks + " WHERE block_num < 0");
  ASSERT_TRUE(none.has_value());
  EXPECT_GT(none->first, none->second);
}

TEST_F(QueryTest, ProjectsColumnsWithAliasesInOrder) {
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Run(R"(SELECT gas_used AS g, block_num FROM "acme/eth_mainnet".blocks)"));
  ASSERT_EQ(batch->num_columns(), 2);
  EXPECT_EQ(batch->schema()->field(0)->name(), "g");
  EXPECT_EQ(batch->schema()->field(1)->name(), "block_num");
  EXPECT_FALSE(batch->schema()->field(1)->nullable());
  EXPECT_EQ(batch->num_rows(), 20);
}

TEST_F(QueryTest, FiltersWithComparisonsAndBetween) {
  ASSERT_OK_AND_ASSIGN(
      auto batch, Run("SELECT block_num FROM \"acme/eth_mainnet\".blocks WHERE block_num "
                      "BETWEEN 24000003 AND 24000007 AND block_num != 24000005"));
  const auto& numbers = static_cast<const arrow::UInt64Array&>(*batch->column(0));
  ASSERT_EQ(numbers.length(), 4);
  EXPECT_EQ(numbers.Value(0), 24'000'003u);
  EXPECT_EQ(numbers.Value(2), 24'000'006u);
}

TEST_F(QueryTest, FiltersOnHashesAndTimestamps) {
  const std::string hash = chain_->BlockHash(24'000'004);
  ASSERT_OK_AND_ASSIGN(
      auto by_hash,
      Run("SELECT block_num FROM \"acme/eth_mainnet\".blocks WHERE hash = '" + hash +
          "'"));
  ASSERT_EQ(by_hash->num_rows(), 1);
  EXPECT_EQ(static_cast<const arrow::UInt64Array&>(*by_hash->column(0)).Value(0),
            24'000'004u);
  ASSERT_OK_AND_ASSIGN(auto by_time,
                       Run("SELECT block_num FROM \"acme/eth_mainnet\".blocks "
                           "WHERE timestamp >= '2025-12-13 00:07:11'"));
  EXPECT_EQ(by_time->num_rows(), 15);  // blocks 5..19 are at or after 00:07:11
}

TEST_F(QueryTest, AggregatesMinMaxCount) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Run("SELECT COUNT(*) AS n, MIN(block_num) lo, MAX(block_num) hi, "
                           "COUNT(gas_price) FROM \"acme/eth_mainnet\".transactions "
                           "WHERE block_num >= 24000010"));
  ASSERT_EQ(batch->num_rows(), 1);
  EXPECT_EQ(batch->schema()->field(0)->name(), "n");
  EXPECT_EQ(batch->schema()->field(3)->name(), "count(gas_price)");
  ASSERT_OK_AND_ASSIGN(auto n, batch->column(0)->GetScalar(0));
  ASSERT_OK_AND_ASSIGN(auto lo, batch->column(1)->GetScalar(0));
  ASSERT_OK_AND_ASSIGN(auto hi, batch->column(2)->GetScalar(0));
  // gas_price is set on legacy transactions only: COUNT skips the others' nulls.
  ASSERT_OK_AND_ASSIGN(auto non_null_price, batch->column(3)->GetScalar(0));
  EXPECT_EQ(n->ToString(), "80");  // 10 blocks × 8 transactions
  EXPECT_EQ(lo->ToString(), "24000010");
  EXPECT_EQ(hi->ToString(), "24000019");
  EXPECT_LT(static_cast<const arrow::Int64Scalar&>(*non_null_price).value, 80);
  EXPECT_GT(static_cast<const arrow::Int64Scalar&>(*non_null_price).value, 0);
}

TEST_F(QueryTest, AggregateOverNoRowsGivesZeroAndNull) {
  ASSERT_OK_AND_ASSIGN(auto batch, Run("SELECT COUNT(*), MAX(block_num) FROM "
                                       "\"acme/eth_mainnet\".blocks WHERE block_num > 1"
                                       "00000000"));
  ASSERT_OK_AND_ASSIGN(auto count, batch->column(0)->GetScalar(0));
  EXPECT_EQ(count->ToString(), "0");
  EXPECT_TRUE(batch->column(1)->IsNull(0));
}

TEST_F(QueryTest, SubqueryProjectsAndFiltersInStages) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Run("SELECT n FROM (SELECT block_num AS n, gas_used FROM "
                           "\"acme/eth_mainnet\".blocks "
                           "WHERE block_num < 24000010) AS s WHERE n >= 24000008"));
  ASSERT_EQ(batch->num_rows(), 2);
  EXPECT_EQ(batch->schema()->field(0)->name(), "n");
}

TEST_F(QueryTest, ResolvesDatasetNamesWithVersionOrWithoutNamespace) {
  EXPECT_OK(Bind(R"(SELECT * FROM "acme/eth_mainnet@1.0.0".blocks)").status());
  EXPECT_OK(Bind("SELECT * FROM eth_mainnet.logs").status());
}

TEST_F(QueryTest, BindErrorsNameWhatIsWrong) {
  EXPECT_THAT(Bind("SELECT * FROM nope.blocks"),
              testing::StatusHasMessage("dataset 'nope'"));
  EXPECT_THAT(Bind("SELECT * FROM eth_mainnet.receipts"),
              testing::StatusHasMessage("table 'receipts' not found"));
  EXPECT_THAT(Bind("SELECT wat FROM eth_mainnet.blocks"),
              testing::StatusHasMessage("column 'wat' not found"));
  EXPECT_THAT(Bind("SELECT * FROM eth_mainnet.blocks WHERE block_num = -1"),
              testing::StatusHasMessage("out of range"));
  EXPECT_THAT(Bind("SELECT * FROM eth_mainnet.blocks WHERE block_num = 'x'"),
              testing::StatusHasMessage("cannot compare column 'block_num'"));
  EXPECT_THAT(Bind("SELECT * FROM eth_mainnet.blocks WHERE hash = '0x00'"),
              testing::StatusHasMessage("expected 32 bytes"));
  EXPECT_THAT(Bind("SELECT block_num, COUNT(*) FROM eth_mainnet.blocks"),
              testing::StatusHasMessage("GROUP BY"));
  EXPECT_THAT(Bind("SELECT * FROM (SELECT COUNT(*) FROM eth_mainnet.blocks) s"),
              testing::StatusHasMessage("aggregate in a subquery"));
  EXPECT_THAT(
      Bind("SELECT block_num, hash, COUNT(*) FROM eth_mainnet.blocks GROUP BY block_num"),
      testing::StatusHasMessage("column 'hash' must appear in GROUP BY"));
  EXPECT_THAT(Bind("SELECT block_num FROM eth_mainnet.blocks GROUP BY wat"),
              testing::StatusHasMessage("column 'wat' not found"));
  EXPECT_THAT(Bind("SELECT DISTINCT ON (block_num) COUNT(*) FROM eth_mainnet.blocks"),
              testing::StatusHasMessage("aggregates with DISTINCT"));
  EXPECT_THAT(Bind("SELECT * FROM (SELECT block_num FROM eth_mainnet.blocks GROUP BY "
                   "block_num) s"),
              testing::StatusHasMessage("GROUP BY in a subquery"));
  EXPECT_THAT(
      Bind("SELECT miner AS c, COUNT(*) AS c FROM eth_mainnet.blocks GROUP BY miner"),
      testing::StatusHasMessage("two columns named 'c' (positions 0 and 1)"));
  EXPECT_THAT(
      Bind("SELECT block_num, gas_used, block_num FROM eth_mainnet.blocks"),
      testing::StatusHasMessage("two columns named 'block_num' (positions 0 and 2)"));
}

TEST_F(QueryTest, GroupByBlockNumAggregatesEachBlocksRows) {
  ASSERT_OK_AND_ASSIGN(
      auto batch,
      Run("SELECT _block_num, COUNT(*) AS n, MIN(tx_index) AS lo, MAX(tx_index), "
          "COUNT(tx_index) FROM eth_mainnet.transactions "
          "WHERE block_num >= 24000005 GROUP BY _block_num"));
  ASSERT_EQ(batch->num_rows(), 15);
  EXPECT_EQ(batch->schema()->field(0)->name(), "_block_num");
  EXPECT_EQ(batch->schema()->field(1)->name(), "n");
  EXPECT_EQ(batch->schema()->field(3)->name(), "max(tx_index)");
  const auto& blocks = static_cast<const arrow::UInt64Array&>(*batch->column(0));
  const auto& counts = static_cast<const arrow::Int64Array&>(*batch->column(1));
  const auto& lows = static_cast<const arrow::UInt32Array&>(*batch->column(2));
  const auto& highs = static_cast<const arrow::UInt32Array&>(*batch->column(3));
  for (int64_t i = 0; i < batch->num_rows(); ++i) {
    EXPECT_EQ(blocks.Value(i), 24'000'005u + static_cast<uint64_t>(i));  // in block order
    EXPECT_EQ(counts.Value(i), 8);
    EXPECT_EQ(lows.Value(i), 0u);
    EXPECT_EQ(highs.Value(i), 7u);
  }
}

TEST_F(QueryTest, ARepeatedGroupingKeyIsIgnored) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Run("SELECT _block_num, COUNT(*) FROM eth_mainnet.transactions "
                           "GROUP BY _block_num, _block_num"));
  EXPECT_EQ(batch->num_rows(), 20);
  ASSERT_OK_AND_ASSIGN(auto distinct,
                       Run("SELECT DISTINCT ON (_block_num, _block_num) tx_index "
                           "FROM eth_mainnet.transactions"));
  EXPECT_EQ(distinct->num_rows(), 20);
}

TEST_F(QueryTest, DistinctOnKeepsTheFirstRowOfEachKey) {
  ASSERT_OK_AND_ASSIGN(auto batch,
                       Run("SELECT DISTINCT ON (_block_num) _block_num, tx_index "
                           "AS first_tx FROM eth_mainnet.transactions"));
  ASSERT_EQ(batch->num_rows(), 20);
  EXPECT_EQ(batch->schema()->field(1)->name(), "first_tx");
  const auto& firsts = static_cast<const arrow::UInt32Array&>(*batch->column(1));
  for (int64_t i = 0; i < batch->num_rows(); ++i) EXPECT_EQ(firsts.Value(i), 0u);
  ASSERT_OK_AND_ASSIGN(auto distinct,
                       Run("SELECT DISTINCT tx_index FROM eth_mainnet.transactions"));
  EXPECT_EQ(distinct->num_rows(), 8);
  ASSERT_OK_AND_ASSIGN(auto none,
                       Run("SELECT _block_num, COUNT(*) FROM eth_mainnet.blocks "
                           "WHERE block_num > 99999999999 GROUP BY _block_num"));
  EXPECT_EQ(none->num_rows(), 0);
  EXPECT_EQ(none->num_columns(), 2);
}

TEST_F(QueryTest, ReportsNonIncrementalOperations) {
  ASSERT_OK_AND_ASSIGN(auto aggregate, Bind("SELECT COUNT(*) FROM eth_mainnet.blocks"));
  EXPECT_EQ(aggregate->NonIncrementalOperation(),
            std::optional<std::string>("Aggregate"));
  ASSERT_OK_AND_ASSIGN(auto limited, Bind("SELECT * FROM eth_mainnet.blocks LIMIT 3"));
  EXPECT_EQ(limited->NonIncrementalOperation(), std::optional<std::string>("Limit"));
  ASSERT_OK_AND_ASSIGN(auto plain, Bind("SELECT * FROM eth_mainnet.blocks"));
  EXPECT_EQ(plain->NonIncrementalOperation(), std::nullopt);
  // As ampd since #1877: grouping first by _block_num is incremental, anything else not.
  const std::pair<const char*, std::optional<std::string>> grouped[] = {
      {"SELECT _block_num, COUNT(*) FROM eth_mainnet.blocks GROUP BY _block_num",
       std::nullopt},
      {"SELECT COUNT(*) FROM eth_mainnet.blocks GROUP BY _block_num, miner",
       std::nullopt},
      {"SELECT DISTINCT ON (_block_num) * FROM eth_mainnet.blocks", std::nullopt},
      {"SELECT miner, COUNT(*) FROM eth_mainnet.blocks GROUP BY miner, _block_num",
       "Aggregate"},
      {"SELECT block_num, COUNT(*) FROM eth_mainnet.blocks GROUP BY block_num",
       "Aggregate"},
      {"SELECT DISTINCT ON (miner, _block_num) * FROM eth_mainnet.blocks", "Distinct"},
      {"SELECT DISTINCT _block_num FROM eth_mainnet.blocks", "Distinct"},
      {"SELECT _block_num, COUNT(*) FROM eth_mainnet.blocks GROUP BY _block_num LIMIT 2",
       "Limit"},
  };
  for (const auto& [text, expected] : grouped) {
    ASSERT_OK_AND_ASSIGN(auto query, Bind(text));
    EXPECT_EQ(query->NonIncrementalOperation(), expected) << text;
  }
}

TEST_F(QueryTest, LiteralsBeyondTheirRangeAreInvalidNotExceptions) {
  EXPECT_THAT(Bind("SELECT * FROM \"acme/eth_mainnet\".blocks WHERE block_num = "
                   "-99999999999999999999"),
              testing::StatusHasMessage("out of range"));
  EXPECT_THAT(Bind("SELECT * FROM \"acme/eth_mainnet\".blocks WHERE block_num = "
                   "99999999999999999999"),
              testing::StatusHasMessage("out of range"));
  // 400 digits overflow a double (std::stod threw std::out_of_range).
  EXPECT_THAT(Bind("SELECT * FROM \"acme/eth_mainnet\".blocks WHERE gas_used < 1" +
                   std::string(400, '0') + ".5"),
              testing::StatusHasMessage("invalid query"));
  EXPECT_OK(
      Bind("SELECT * FROM \"acme/eth_mainnet\".blocks WHERE block_num > 5").status());
}

// Amp's EVM functions over the synthetic chain: every catalogued event's logs are valid
// encodings, so decoding them fills every field.
TEST_F(QueryTest, EveryCataloguedEventDecodesWithEveryField) {
  UseChain(300);
  for (const auto& event : ChainEvents()) {
    const std::string signature = event.signature;
    ASSERT_OK_AND_ASSIGN(
        auto rows,
        Run("SELECT topic3, evm_decode_log(topic1, topic2, topic3, data, '" + signature +
            "') AS e FROM \"acme/eth_mainnet\".logs WHERE topic0 = evm_topic('" +
            signature + "')"));
    ASSERT_OK(rows->ValidateFull());
    // ERC-20 and ERC-721 Transfer share topic0: a log is the one whose topics it has.
    const bool erc721 = event.rank == 7;
    const bool erc20 = signature.rfind("Transfer(", 0) == 0 && !erc721;
    const auto& decoded = static_cast<const arrow::StructArray&>(*rows->column(1));
    int64_t checked = 0;
    for (int64_t row = 0; row < rows->num_rows(); ++row) {
      const bool has_topic3 = rows->column(0)->IsValid(row);
      if ((erc20 && has_topic3) || (erc721 && !has_topic3)) continue;
      ++checked;
      for (int field = 0; field < decoded.num_fields(); ++field) {
        EXPECT_TRUE(decoded.field(field)->IsValid(row))
            << signature << " row " << row << " field " << field;
      }
    }
    EXPECT_GT(checked, 2) << signature;
  }
}

TEST_F(QueryTest, DecodedFieldsAndShiftedUnitsThroughASubquery) {
  ASSERT_OK_AND_ASSIGN(
      auto rows,
      Run("SELECT block_num, shift_units(t['value'], -18) AS value, t['owner'] AS owner "
          "FROM (SELECT block_num, evm_decode_log(topic1, topic2, topic3, data, "
          "'Approval(address indexed owner, address indexed spender, uint256 value)') AS "
          "t "
          "FROM \"acme/eth_mainnet\".logs WHERE topic0 = "
          "evm_topic('Approval(address,address,uint256)')) WHERE block_num >= 24000005"));
  ASSERT_OK(rows->ValidateFull());
  ASSERT_GT(rows->num_rows(), 0);
  EXPECT_TRUE(rows->schema()->field(1)->type()->Equals(*arrow::utf8()));
  EXPECT_TRUE(rows->schema()->field(2)->type()->Equals(*arrow::fixed_size_binary(20)));
  // An unlimited allowance, 2^256 - 1 wei, shifted by 18 places.
  ASSERT_OK_AND_ASSIGN(
      auto all,
      Run("SELECT shift_units(evm_decode_log(topic1, topic2, topic3, data, "
          "'Approval(address "
          "indexed owner, address indexed spender, uint256 value)')['value'], -18) AS v "
          "FROM \"acme/eth_mainnet\".logs WHERE topic0 = "
          "evm_topic('Approval(address,address,uint256)')"));
  bool unlimited = false;
  const auto& values = static_cast<const arrow::StringArray&>(*all->column(0));
  for (int64_t row = 0; row < values.length(); ++row) {
    unlimited |= values.GetString(row) ==
                 "115792089237316195423570985008687907853269984665640564039457."
                 "584007913129639935";
  }
  EXPECT_TRUE(unlimited);
  // The scan still reads only the blocks the outer filter allows.
  ASSERT_OK_AND_ASSIGN(
      auto query,
      Bind(
          "SELECT n FROM (SELECT block_num AS n, evm_topic('Sync(uint112,uint112)') AS t "
          "FROM \"acme/eth_mainnet\".logs) WHERE n BETWEEN 24000003 AND 24000004"));
  ASSERT_OK_AND_ASSIGN(auto bounds, query->BlockBounds());
  ASSERT_TRUE(bounds.has_value());
  EXPECT_EQ(bounds->first, 24000003u);
}

TEST_F(QueryTest, EvmFunctionErrorsNameTheFunctionAndWhatIsWrong) {
  const std::string logs = " FROM \"acme/eth_mainnet\".logs";
  const std::pair<std::string, std::string> cases[] = {
      {"SELECT evm_decode_log(topic1, topic2, topic3, data, 'Swap(uint a') AS e" + logs,
       "evm_decode_log: parse event signature"},
      {"SELECT evm_decode(topic1, topic2, topic3, data, address) AS e" + logs,
       "evm_decode: expected a string literal for the signature"},
      {"SELECT evm_decode_log(topic1, topic2, data) AS e" + logs,
       "expected 5 arguments, but got 3"},
      {"SELECT evm_decode_log(topic1, topic2, topic3, address, 'E(uint a)') AS e" + logs,
       "argument 4 must be binary"},
      {"SELECT evm_decode_log(topic1, topic2, topic3, data, "
       "'E(uint indexed a, uint indexed b, uint indexed c, uint indexed d)') AS e" +
           logs,
       "event can only have 3 indexed parameters but has 4"},
      {"SELECT block_num" + logs + " WHERE topic0 = evm_topic('E(uint a) anonymous')",
       "anonymous event E has no topic0"},
      {"SELECT block_num" + logs + " WHERE topic0 = evm_topic(data)",
       "column 'data' not found in the right side of a comparison (only literals)"},
      {"SELECT evm_topic(address) AS t" + logs, "evm_topic: expected scalar argument"},
      {"SELECT evm_encode_hex('0x12') AS h" + logs, "expected 20 or 32 bytes, got 1"},
      {"SELECT evm_encode_hex(NULL) AS h" + logs, "input cannot be null"},
      {"SELECT evm_decode_hex(topic0) AS h, evm_decode_hex(data) AS d" + logs,
       "expected FixedSizeBinary(20) or FixedSizeBinary(32), got binary"},
      {"SELECT evm_decode_params(data, 'f(uint8)') AS p" + logs,
       "function f has unnamed input parameter"},
      {"SELECT evm_decode_type(data, 'uint7') AS p" + logs,
       "failed to parse Solidity type"},
      {"SELECT shift_units(data, 2) AS p" + logs,
       "expected numeric type or Utf8 for first argument"},
      {"SELECT evm_decode_log(topic1, topic2, topic3, data, 'E(uint a)')['b'] AS p" +
           logs,
       "field 'b' not found"},
      {"SELECT DISTINCT evm_topic('E(uint a)') AS t" + logs,
       "function call in a GROUP BY"},
      {"SELECT block_num" + logs + " WHERE block_num = evm_topic('E(uint a)')",
       "cannot compare column 'block_num'"},
  };
  for (const auto& [text, message] : cases) {
    EXPECT_THAT(Bind(text), testing::StatusHasMessage(message)) << text;
  }
  // A function without inputs encodes one call per row (not one for the whole batch).
  ASSERT_OK_AND_ASSIGN(
      auto calls, Run("SELECT block_num, evm_encode_params('function f()') AS c FROM "
                      "\"acme/eth_mainnet\".blocks WHERE block_num < 24000005"));
  ASSERT_OK(calls->ValidateFull());
  ASSERT_EQ(calls->num_rows(), 5);
  EXPECT_EQ(static_cast<const arrow::BinaryArray&>(*calls->column(1)).GetString(4),
            std::string("\x26\x12\x1f\xf0", 4));
  // Shifting by more than 32 places fails the query when it runs.
  EXPECT_THAT(
      Run("SELECT shift_units(block_num, 33) AS v FROM \"acme/eth_mainnet\".blocks"),
      testing::StatusHasMessage("units must be between -32 and 32 (got 33)"));
}

TEST(ShiftUnitsTest, ShiftsTheDecimalPointExactlyAndWritesPlainText) {
  const std::tuple<const char*, int64_t, const char*> cases[] = {
      {"1.5", 18, "1500000000000000000"},
      {"1500000000000000000", -18, "1.5"},
      {"1.5", -18, "0.0000000000000000015"},
      {"123456", -3, "123.456"},
      {"1", 8, "100000000"},
      {"28998036497399455000", -18, "28.998036497399455"},
      {"0", 5, "0"},
      {"-2.50", 1, "-25"},
      {"-0.000", 3, "0"},
      {"1e3", -1, "100"},
      {"+7", 0, "7"},
  };
  for (const auto& [value, units, expected] : cases) {
    auto shifted = ShiftDecimalText(value, units);
    ASSERT_OK(shifted.status());
    EXPECT_EQ(*shifted, expected) << value << " " << units;
  }
  EXPECT_THAT(ShiftDecimalText("1", -33), testing::StatusHasMessage("(got -33)"));
  EXPECT_THAT(ShiftDecimalText("abc", 1), testing::StatusHasMessage("'abc'"));
  EXPECT_THAT(ShiftDecimalText("1.2.3", 1), testing::StatusHasMessage("'1.2.3'"));
  EXPECT_THAT(ShiftDecimalText("", 1), testing::StatusHasMessage("''"));
  EXPECT_THAT(ShiftDecimalText("1e+-5", 0), testing::StatusHasMessage("'1e+-5'"));
  EXPECT_THAT(ShiftDecimalText("1e", 0), testing::StatusHasMessage("'1e'"));
}

}  // namespace
}  // namespace ampdelta::devserver
