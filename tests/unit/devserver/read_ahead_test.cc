#include "ampdelta/devserver/read_ahead.h"

#include <atomic>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/devserver/synthetic_chain.h"
#include "tests/support/test_util.h"

namespace ampdelta::devserver {
namespace {

arrow::Result<std::shared_ptr<arrow::Table>> Drain(BatchIterator* scan) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  std::shared_ptr<arrow::Schema> schema;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto batch, scan->Next());
    if (batch == nullptr) break;
    schema = batch->schema();
    batches.push_back(std::move(batch));
  }
  return arrow::Table::FromRecordBatches(schema, batches);
}

std::unique_ptr<SyntheticChain> Chain() {
  SyntheticChainOptions options;
  options.initial_blocks = 1000;
  options.transactions_per_block = 7;
  options.max_rows_per_batch = 100;
  return std::make_unique<SyntheticChain>(options);
}

TEST(ReadAheadTest, PiecesOnSeveralThreadsComeOutAsOneScanInBlockOrder) {
  const auto owned = Chain();
  const SyntheticChain& chain = *owned;
  const ScanRange synced = *chain.Synced();
  ASSERT_OK_AND_ASSIGN(auto plain, chain.Scan("transactions", synced));
  ASSERT_OK_AND_ASSIGN(auto expected, Drain(plain.get()));
  std::atomic<int> transformed{0};
  for (const int threads : {1, 3, 8}) {
    for (const uint64_t piece : {1u, 17u, 5000u}) {
      auto scan = ReadAhead(
          chain, "transactions", synced,
          [&](const std::shared_ptr<arrow::RecordBatch>& batch) {
            ++transformed;
            return arrow::Result<std::shared_ptr<arrow::RecordBatch>>(batch);
          },
          ReadAheadOptions{threads, piece, 2});
      ASSERT_OK_AND_ASSIGN(auto got, Drain(scan.get()));
      EXPECT_EQ(got->num_rows(), 7000) << threads << " " << piece;
      EXPECT_TRUE(got->Equals(*expected)) << threads << " " << piece;
    }
  }
  EXPECT_GT(transformed.load(), 0);
}

TEST(ReadAheadTest, APieceThatFailsFailsTheScanWhereItsRowsWouldBe) {
  const auto owned = Chain();
  const SyntheticChain& chain = *owned;
  const ScanRange synced = *chain.Synced();
  auto scan = ReadAhead(
      chain, "transactions", synced,
      [first = synced.range.start](const std::shared_ptr<arrow::RecordBatch>& batch)
          -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
        const auto& blocks =
            static_cast<const arrow::UInt64Array&>(*batch->GetColumnByName("block_num"));
        if (blocks.Value(0) >= first + 500) {
          return arrow::Status::IOError("piece past block 500 failed");
        }
        return batch;
      },
      ReadAheadOptions{4, 50, 2});
  int64_t rows = 0;
  arrow::Status failure;
  while (true) {
    auto batch = scan->Next();
    if (!batch.ok()) {
      failure = batch.status();
      break;
    }
    ASSERT_NE(*batch, nullptr) << "the failure was lost";
    rows += (*batch)->num_rows();
  }
  EXPECT_EQ(rows, 500 * 7) << "every row before the failing piece, none after";
  EXPECT_THAT(failure, testing::StatusHasMessage("past block 500"));
}

TEST(ReadAheadTest, AScanLeftHalfwayStopsItsWorkers) {
  const auto owned = Chain();
  const SyntheticChain& chain = *owned;
  auto scan = ReadAhead(
      chain, "transactions", *chain.Synced(),
      [](const std::shared_ptr<arrow::RecordBatch>& batch) {
        return arrow::Result<std::shared_ptr<arrow::RecordBatch>>(batch);
      },
      ReadAheadOptions{4, 1, 1});
  ASSERT_OK_AND_ASSIGN(auto first, scan->Next());
  ASSERT_NE(first, nullptr);
  scan.reset();  // joins the workers; a hang here fails the test by its timeout
}

TEST(ReadAheadTest, ACachedPieceIsServedAgainFromMemoryWithinItsBudget) {
  const auto owned = Chain();
  const SyntheticChain& chain = *owned;
  const ScanRange synced = *chain.Synced();
  ASSERT_OK_AND_ASSIGN(auto plain, chain.Scan("transactions", synced));
  ASSERT_OK_AND_ASSIGN(auto expected, Drain(plain.get()));
  const auto identity = [](const std::shared_ptr<arrow::RecordBatch>& batch) {
    return arrow::Result<std::shared_ptr<arrow::RecordBatch>>(batch);
  };
  PieceCache cache(int64_t{1} << 30);
  ReadAheadOptions options{2, 100, 2, &cache};
  auto first = ReadAhead(chain, "transactions", synced, identity, options);
  ASSERT_OK_AND_ASSIGN(auto made, Drain(first.get()));
  first.reset();
  const int64_t held = cache.bytes();
  EXPECT_GT(held, 0);
  auto again = ReadAhead(chain, "transactions", synced, identity, options);
  ASSERT_OK_AND_ASSIGN(auto served, Drain(again.get()));
  EXPECT_TRUE(made->Equals(*expected));
  EXPECT_TRUE(served->Equals(*expected));
  EXPECT_EQ(cache.bytes(), held) << "the second scan made nothing new";
  // Another view of the chain (here: another range's pieces) is never served from it.
  ScanRange other = synced;
  other.range.start += 1;
  auto shifted = ReadAhead(chain, "transactions", other, identity, options);
  ASSERT_OK_AND_ASSIGN(auto rows, Drain(shifted.get()));
  EXPECT_EQ(rows->num_rows(), 999 * 7);
  // After a reorg the chain's rows differ: nothing kept before is served.
  auto reorged = Chain();
  PieceCache before_reorg(int64_t{1} << 30);
  ReadAheadOptions kept{2, 100, 2, &before_reorg};
  auto warm = ReadAhead(*reorged, "transactions", *reorged->Synced(), identity, kept);
  ASSERT_OK(Drain(warm.get()).status());
  warm.reset();
  ASSERT_OK(reorged->Reorg(5));
  ASSERT_OK_AND_ASSIGN(auto fresh, reorged->Scan("transactions", *reorged->Synced()));
  ASSERT_OK_AND_ASSIGN(auto want, Drain(fresh.get()));
  auto after = ReadAhead(*reorged, "transactions", *reorged->Synced(), identity, kept);
  ASSERT_OK_AND_ASSIGN(auto got, Drain(after.get()));
  EXPECT_TRUE(got->Equals(*want));
  // A budget too small keeps nothing.
  PieceCache tiny(1);
  ReadAheadOptions small{2, 100, 2, &tiny};
  auto scan = ReadAhead(chain, "transactions", synced, identity, small);
  ASSERT_OK(Drain(scan.get()).status());
  EXPECT_EQ(tiny.bytes(), 0);
}

}  // namespace
}  // namespace ampdelta::devserver
