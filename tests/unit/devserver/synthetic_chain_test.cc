#include "ampdelta/devserver/synthetic_chain.h"

#include <map>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/devserver/evm_schemas.h"
#include "ampdelta/util/hex.h"
#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadAll(const Dataset& dataset,
                                                           const std::string& table,
                                                           const ScanRange& range) {
  ARROW_ASSIGN_OR_RAISE(auto iterator, dataset.Scan(table, range));
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, iterator->Next());
    if (batch == nullptr) break;
    batches.push_back(batch);
  }
  ARROW_ASSIGN_OR_RAISE(auto schema, dataset.TableSchema(table));
  ARROW_ASSIGN_OR_RAISE(auto combined, arrow::Table::FromRecordBatches(schema, batches));
  return combined->CombineChunksToBatch();
}

std::string HashAt(const arrow::RecordBatch& batch, const std::string& column,
                   int64_t row) {
  const auto& array =
      static_cast<const arrow::FixedSizeBinaryArray&>(*batch.GetColumnByName(column));
  return ToHex0x(array.GetView(row));
}

uint64_t U64At(const arrow::RecordBatch& batch, const std::string& column, int64_t row) {
  return static_cast<const arrow::UInt64Array&>(*batch.GetColumnByName(column))
      .Value(row);
}

class SyntheticChainTest : public ::testing::Test {
 protected:
  SyntheticChain chain_{SyntheticChainOptions{}};
};

TEST_F(SyntheticChainTest, QuickstartDefaultsServeHundredBlocksFrom24M) {
  EXPECT_EQ(chain_.first_block(), 24'000'000u);
  EXPECT_EQ(chain_.head(), 24'000'099u);
  ASSERT_OK_AND_ASSIGN(auto blocks, ReadAll(chain_, "blocks", *chain_.Synced()));
  ASSERT_EQ(blocks->num_rows(), 100);
  EXPECT_TRUE(blocks->schema()->Equals(*BlocksSchema()));
  ASSERT_OK(blocks->ValidateFull());
  EXPECT_EQ(U64At(*blocks, "block_num", 0), 24'000'000u);
  EXPECT_EQ(U64At(*blocks, "_block_num", 99), 24'000'099u);
  // 2025-12-13 00:25:59 UTC, as in the Python SDK's Quickstart output.
  const auto& timestamps =
      static_cast<const arrow::TimestampArray&>(*blocks->GetColumnByName("timestamp"));
  EXPECT_EQ(timestamps.Value(99), int64_t{1'765'585'559} * 1'000'000'000);
  EXPECT_EQ(timestamps.Value(99) - timestamps.Value(98), int64_t{12} * 1'000'000'000);
}

TEST_F(SyntheticChainTest, HashesChainThroughParentHash) {
  const ScanRange synced = *chain_.Synced();
  ASSERT_OK_AND_ASSIGN(auto blocks, ReadAll(chain_, "blocks", synced));
  for (int64_t i = 1; i < blocks->num_rows(); ++i) {
    ASSERT_EQ(HashAt(*blocks, "parent_hash", i), HashAt(*blocks, "hash", i - 1)) << i;
  }
  EXPECT_EQ(synced.range.hash, HashAt(*blocks, "hash", 99));
  EXPECT_EQ(synced.range.prev_hash, HashAt(*blocks, "parent_hash", 0));
  EXPECT_TRUE(IsHash32Hex(synced.range.hash));
  EXPECT_EQ(synced.range.timestamp, std::optional<uint64_t>(1'765'585'559));
}

TEST_F(SyntheticChainTest, SameSeedGivesIdenticalDataAndOtherSeedsDiffer) {
  SyntheticChain again{SyntheticChainOptions{}};
  SyntheticChainOptions other_options;
  other_options.seed = 7;
  SyntheticChain other{other_options};
  for (const char* table : {"blocks", "transactions", "logs"}) {
    ASSERT_OK_AND_ASSIGN(auto a, ReadAll(chain_, table, *chain_.Synced()));
    ASSERT_OK_AND_ASSIGN(auto b, ReadAll(again, table, *again.Synced()));
    ASSERT_OK_AND_ASSIGN(auto c, ReadAll(other, table, *other.Synced()));
    EXPECT_TRUE(a->Equals(*b)) << table;
    EXPECT_FALSE(a->Equals(*c)) << table;
  }
}

TEST_F(SyntheticChainTest, TablesHaveAmpSchemasAndConfiguredRowCounts) {
  SyntheticChainOptions options;
  options.initial_blocks = 10;
  options.transactions_per_block = 5;
  options.logs_per_transaction = 3;
  SyntheticChain chain(options);
  ASSERT_OK_AND_ASSIGN(auto txs, ReadAll(chain, "transactions", *chain.Synced()));
  ASSERT_OK_AND_ASSIGN(auto logs, ReadAll(chain, "logs", *chain.Synced()));
  EXPECT_EQ(txs->num_rows(), 50);
  EXPECT_EQ(logs->num_rows(), 150);
  EXPECT_TRUE(txs->schema()->Equals(*TransactionsSchema()));
  EXPECT_TRUE(logs->schema()->Equals(*LogsSchema()));
  ASSERT_OK(txs->ValidateFull());
  ASSERT_OK(logs->ValidateFull());
  // Every log points at a transaction of its block, in transaction order, and its
  // log_index counts the block's logs.
  const auto log_blocks =
      std::static_pointer_cast<arrow::UInt64Array>(logs->GetColumnByName("block_num"));
  const auto log_tx =
      std::static_pointer_cast<arrow::UInt32Array>(logs->GetColumnByName("tx_index"));
  const auto log_index =
      std::static_pointer_cast<arrow::UInt32Array>(logs->GetColumnByName("log_index"));
  for (int64_t row = 0; row < logs->num_rows(); ++row) {
    const int64_t block =
        static_cast<int64_t>(log_blocks->Value(row) - options.start_block);
    ASSERT_LT(log_tx->Value(row), 5u);
    EXPECT_EQ(HashAt(*logs, "tx_hash", row),
              HashAt(*txs, "tx_hash", block * 5 + log_tx->Value(row)));
    EXPECT_EQ(log_index->Value(row), static_cast<uint32_t>(row % 15));
    if (row % 15 != 0) {
      EXPECT_LE(log_tx->Value(row - 1), log_tx->Value(row));
    }
  }
  ASSERT_OK_AND_ASSIGN(auto blocks, ReadAll(chain, "blocks", *chain.Synced()));
  EXPECT_EQ(HashAt(*txs, "block_hash", 5), HashAt(*blocks, "hash", 1));
}

TEST_F(SyntheticChainTest, LogsSpreadOverTransactionsWithoutOneCollectingTheRest) {
  SyntheticChainOptions options;
  options.initial_blocks = 4;
  options.transactions_per_block = 348;  // the eth_rpc fixture's block
  options.logs_per_transaction = 2;
  SyntheticChain chain(options);
  ASSERT_OK_AND_ASSIGN(auto logs, ReadAll(chain, "logs", *chain.Synced()));
  ASSERT_EQ(logs->num_rows(), 4 * 348 * 2);
  const auto blocks =
      std::static_pointer_cast<arrow::UInt64Array>(logs->GetColumnByName("block_num"));
  const auto txs =
      std::static_pointer_cast<arrow::UInt32Array>(logs->GetColumnByName("tx_index"));
  std::map<std::pair<uint64_t, uint32_t>, int> per_tx;
  for (int64_t row = 0; row < logs->num_rows(); ++row) {
    ++per_tx[{blocks->Value(row), txs->Value(row)}];
  }
  int most = 0;
  for (const auto& [tx, count] : per_tx) most = std::max(most, count);
  // The fixture's busiest transaction has 29 logs; about a third of transactions have
  // none.
  EXPECT_LE(most, 30);
  EXPECT_GT(per_tx.size(), 4u * 348 / 2);
  EXPECT_LT(per_tx.size(), 4u * 348 * 9 / 10);
}

TEST_F(SyntheticChainTest, BatchesStayWithinTheRowBound) {
  SyntheticChainOptions options;
  options.initial_blocks = 1000;
  options.transactions_per_block = 10;
  options.max_rows_per_batch = 1000;
  SyntheticChain chain(options);
  ASSERT_OK_AND_ASSIGN(auto iterator, chain.Scan("transactions", *chain.Synced()));
  int64_t rows = 0;
  int batches = 0;
  while (true) {
    ASSERT_OK_AND_ASSIGN(auto batch, iterator->Next());
    if (batch == nullptr) break;
    EXPECT_LE(batch->num_rows(), 1000);
    rows += batch->num_rows();
    ++batches;
  }
  EXPECT_EQ(rows, 10'000);
  EXPECT_EQ(batches, 10);
}

TEST_F(SyntheticChainTest, ReorgReplacesOnlyTheNewestBlocksAndKeepsTheChain) {
  const std::string before_fork = chain_.BlockHash(24'000'096);
  const std::string old_head = chain_.BlockHash(24'000'099);
  ASSERT_OK(chain_.Reorg(3));
  EXPECT_EQ(chain_.reorg_count(), 1u);
  EXPECT_EQ(chain_.head(), 24'000'099u);
  EXPECT_EQ(chain_.BlockHash(24'000'096), before_fork);
  EXPECT_NE(chain_.BlockHash(24'000'099), old_head);
  ASSERT_OK_AND_ASSIGN(auto blocks, ReadAll(chain_, "blocks", *chain_.Synced()));
  for (int64_t i = 1; i < blocks->num_rows(); ++i) {
    ASSERT_EQ(HashAt(*blocks, "parent_hash", i), HashAt(*blocks, "hash", i - 1)) << i;
  }
  EXPECT_THAT(chain_.Reorg(0), testing::StatusHasMessage("at least 1"));
  EXPECT_THAT(chain_.Reorg(101), testing::StatusHasMessage("below the first block"));
}

TEST_F(SyntheticChainTest, ANewHeadAndItsReorgAreOneChange) {
  const std::string before_fork = chain_.BlockHash(24'000'096);
  const std::string old_block = chain_.BlockHash(24'000'099);
  const uint64_t counter = chain_.change_counter();
  ASSERT_OK(chain_.AdvanceHeadThenReorg({4, 2}));
  EXPECT_EQ(chain_.head(), 24'000'100u);
  EXPECT_EQ(chain_.change_counter(), counter + 1);
  EXPECT_EQ(chain_.reorg_count(), 2u);
  EXPECT_EQ(chain_.BlockHash(24'000'096), before_fork);
  EXPECT_NE(chain_.BlockHash(24'000'099), old_block);
  ASSERT_OK_AND_ASSIGN(auto blocks, ReadAll(chain_, "blocks", *chain_.Synced()));
  ASSERT_EQ(blocks->num_rows(), 101);
  for (int64_t i = 1; i < blocks->num_rows(); ++i) {
    ASSERT_EQ(HashAt(*blocks, "parent_hash", i), HashAt(*blocks, "hash", i - 1)) << i;
  }
  // A fork that cannot be made leaves the head where it was.
  EXPECT_THAT(chain_.AdvanceHeadThenReorg({1, 103}),
              testing::StatusHasMessage("below the first block"));
  EXPECT_EQ(chain_.head(), 24'000'100u);
  EXPECT_EQ(chain_.reorg_count(), 2u);
  ASSERT_OK(chain_.AdvanceHeadThenReorg({}));
  EXPECT_EQ(chain_.head(), 24'000'101u);
}

TEST_F(SyntheticChainTest, MicrobatchesFollowTheHeadAndRespectTheSizeLimit) {
  auto first = chain_.NextMicrobatch(std::nullopt, 30);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->range.start, 24'000'000u);
  EXPECT_EQ(first->range.end, 24'000'029u);
  auto last =
      chain_.NextMicrobatch(ChainPosition{24'000'089, chain_.BlockHash(24'000'089)}, 30);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->range.start, 24'000'090u);
  EXPECT_EQ(last->range.end, 24'000'099u);
  EXPECT_EQ(last->range.prev_hash, chain_.BlockHash(24'000'089));
  const ChainPosition head{24'000'099, chain_.BlockHash(24'000'099)};
  EXPECT_FALSE(chain_.NextMicrobatch(head, 30).has_value());
  const uint64_t counter = chain_.change_counter();
  chain_.AdvanceHead(2);
  EXPECT_NE(chain_.change_counter(), counter);
  auto next = chain_.NextMicrobatch(head, 30);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->range.start, 24'000'100u);
  EXPECT_EQ(next->range.end, 24'000'101u);
}

TEST_F(SyntheticChainTest, StaleCursorRestartsAtTheForkPoint) {
  const ChainPosition seen{24'000'099, chain_.BlockHash(24'000'099)};
  ASSERT_OK(chain_.Reorg(5));  // fork at 24,000,095
  chain_.AdvanceHead(1);
  auto next = chain_.NextMicrobatch(seen, 1000);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->range.start, 24'000'095u);
  EXPECT_EQ(next->range.end, 24'000'100u);
  EXPECT_EQ(next->range.prev_hash, chain_.BlockHash(24'000'094));

  // Two reorgs since the cursor: the lower fork point wins.
  const ChainPosition seen_again{24'000'100, chain_.BlockHash(24'000'100)};
  ASSERT_OK(chain_.Reorg(2));  // fork at 24,000,099
  ASSERT_OK(chain_.Reorg(4));  // fork at 24,000,097
  auto rewound = chain_.NextMicrobatch(seen_again, 1000);
  ASSERT_TRUE(rewound.has_value());
  EXPECT_EQ(rewound->range.start, 24'000'097u);
}

TEST_F(SyntheticChainTest, UnknownCursorHashReemitsTheCursorBlock) {
  const ChainPosition unknown{24'000'050, "0x" + std::string(64, 'f')};
  auto next = chain_.NextMicrobatch(unknown, 10);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->range.start, 24'000'050u);
}

TEST_F(SyntheticChainTest, CursorPastTheHeadWaits) {
  EXPECT_FALSE(
      chain_.NextMicrobatch(ChainPosition{24'000'500, "0x" + std::string(64, '1')}, 10));
}

}  // namespace
}  // namespace ampdelta::devserver
