// Writes a careless or hostile user attempts: each must fail cleanly with the table as it
// was, or do the right thing (issue 11's data-loss defects).

#include <filesystem>
#include <fstream>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "ampdelta/delta/log/log_segment.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/merge.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/delta/read/predicate.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/txn/write_lease.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/memory_store.h"
#include "ampdelta/util/clock.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

namespace fs = std::filesystem;
using ::ampdelta::testing::HasErrorCode;
using ::ampdelta::testing::StatusHasMessage;
using test_tables::BlockNumbers;
using test_tables::Blocks;
using test_tables::Range;
using test_tables::WriteBatches;

std::shared_ptr<arrow::RecordBatch> Renamed(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::vector<std::string>& names) {
  arrow::FieldVector fields;
  for (int i = 0; i < batch->num_columns(); ++i) {
    fields.push_back(batch->schema()->field(i)->WithName(names[static_cast<size_t>(i)]));
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), batch->num_rows(),
                                  batch->columns());
}

// Every file under `root` (data, log, leases, temporary files), relative.
std::vector<std::string> AllFiles(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) out.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> DataFiles(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& file : AllFiles(root)) {
    if (file.find(".parquet") != std::string::npos && file.rfind("_delta_log", 0) != 0) {
      out.push_back(file);
    }
  }
  return out;
}

// A store whose every commit put fails permanently with `errno_name` (`message`).
std::shared_ptr<storage::FaultStore> FailingCommits(
    std::shared_ptr<storage::ObjectStore> inner, const std::string& commit_prefix,
    const std::string& message, const std::string& errno_name) {
  auto faulty = std::make_shared<storage::FaultStore>(std::move(inner));
  storage::FaultRule rule;
  rule.op = storage::StoreOp::kPut;
  rule.path_contains = commit_prefix;
  rule.nth = 0;
  rule.message = message;
  rule.subcode = errno_name;
  faulty->AddRule(rule);
  return faulty;
}

class WriteSafetyTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::ObjectStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(WriteSafetyTest, PartitioningByEveryColumnIsAnErrorAndWritesNothing) {
  TableWriteOptions options;
  options.partition_by = {"block_num", "network"};
  EXPECT_THAT(WriteBatches(store_, {Blocks(0, 3)}, options),
              StatusHasMessage("partition_by names every column of the data"));
  EXPECT_THAT(Snapshot::Load(store_), HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("", ""));
  EXPECT_TRUE(objects.empty());
}

TEST_F(WriteSafetyTest, RepeatedPartitionColumnIsAnErrorInAnyCase) {
  for (const std::vector<std::string>& repeated :
       {std::vector<std::string>{"network", "network"}, {"network", "NETWORK"}}) {
    TableWriteOptions options;
    options.partition_by = repeated;
    EXPECT_THAT(WriteBatches(store_, {Blocks(0, 3)}, options), StatusHasMessage("twice"));
  }
  TableWriteOptions empty;
  empty.partition_by = {""};
  EXPECT_THAT(WriteBatches(store_, {Blocks(0, 3)}, empty),
              StatusHasMessage("empty column name"));
  EXPECT_THAT(Snapshot::Load(store_), HasErrorCode(ErrorCode::kNotFound));
}

TEST_F(WriteSafetyTest, ColumnDifferingOnlyInCaseWritesIntoTheExistingColumn) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}).status());
  ASSERT_OK(
      WriteBatches(store_, {Renamed(Blocks(3, 5), {"Block_Num", "NETWORK"})}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_EQ(snapshot->schema()->num_fields(), 2);
  EXPECT_EQ(snapshot->schema()->field(0)->name(), "block_num");
  EXPECT_EQ(snapshot->schema()->field(1)->name(), "network");
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 5));
  // With merge_schema=false a case difference is no schema difference either.
  TableWriteOptions strict;
  strict.merge_schema = false;
  ASSERT_OK(
      WriteBatches(store_, {Renamed(Blocks(5, 6), {"BLOCK_NUM", "Network"})}, strict)
          .status());
}

TEST_F(WriteSafetyTest, PartitionColumnsMergeKeysAndPredicatesIgnoreCase) {
  TableWriteOptions partitioned;
  partitioned.partition_by = {"NetWork"};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 4)}, partitioned).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->partition_columns(), std::vector<std::string>{"network"});
  // The same partitioning spelled differently matches the table's.
  partitioned.partition_by = {"NETWORK"};
  ASSERT_OK(WriteBatches(store_, {Blocks(4, 6)}, partitioned).status());
  ASSERT_OK_AND_ASSIGN(auto predicate,
                       Predicate::Parse("BLOCK_NUM >= 4", snapshot->schema()));
  ASSERT_OK(DeleteRows(store_, "Block_Num >= 4").status());
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 4));
  MergeOptions merge;
  merge.keys = {"BLOCK_NUM"};
  auto source = Blocks(2, 6);
  ASSERT_OK_AND_ASSIGN(auto merged, MergeRows(store_, source->schema(), {source}, merge));
  EXPECT_EQ(merged.rows_updated, 2);
  EXPECT_EQ(merged.rows_inserted, 2);
  merge.keys = {"block_num", "Block_Num"};
  EXPECT_THAT(MergeRows(store_, source->schema(), {source}, merge),
              StatusHasMessage("twice"));
}

TEST_F(WriteSafetyTest, HostileColumnNamesAreRefusedNamingTheColumn) {
  const std::string nul("bad\0name", 8);
  const std::string latin1 = "caf\xe9";
  for (const std::string& name : {nul, latin1, std::string(""), std::string("a b"),
                                  std::string("x,y"), std::string("new\nline")}) {
    auto batch = Renamed(Blocks(0, 2), {"block_num", name});
    auto written = WriteBatches(store_, {batch});
    EXPECT_THAT(written, HasErrorCode(ErrorCode::kInvalidInput)) << name;
    EXPECT_THAT(written, StatusHasMessage("column name")) << name;
  }
  EXPECT_THAT(Snapshot::Load(store_), HasErrorCode(ErrorCode::kNotFound));
}

TEST_F(WriteSafetyTest, InvalidUtf8StringValueIsAnErrorNamingColumnAndRow) {
  arrow::UInt64Builder numbers;
  arrow::StringBuilder names;
  ASSERT_OK(numbers.AppendValues({1, 2, 3}));
  ASSERT_OK(names.Append("ok"));
  ASSERT_OK(names.Append("\xff\xfe"));
  ASSERT_OK(names.Append("fine"));
  auto schema = arrow::schema(
      {arrow::field("block_num", arrow::uint64()), arrow::field("label", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 3, {*numbers.Finish(), *names.Finish()});
  auto written = WriteBatches(store_, {batch});
  EXPECT_THAT(written, HasErrorCode(ErrorCode::kInvalidInput));
  EXPECT_THAT(written, StatusHasMessage("column 'label' row 1"));
  EXPECT_THAT(Snapshot::Load(store_), HasErrorCode(ErrorCode::kNotFound));
}

TEST_F(WriteSafetyTest, SplitMultibyteCharacterAcrossValuesIsInvalid) {
  // "é" is C3 A9: split between two values, the buffer as a whole is valid UTF-8.
  arrow::StringBuilder names;
  ASSERT_OK(names.Append("a\xc3"));
  ASSERT_OK(names.Append("\xa9z"));
  auto schema = arrow::schema(
      {arrow::field("label", arrow::utf8()), arrow::field("n", arrow::int64())});
  arrow::Int64Builder n;
  ASSERT_OK(n.AppendValues({1, 2}));
  auto batch = arrow::RecordBatch::Make(schema, 2, {*names.Finish(), *n.Finish()});
  EXPECT_THAT(WriteBatches(store_, {batch}), StatusHasMessage("not valid UTF-8"));
}

// The bytes under a null slot are no value (Arrow leaves them undefined): whatever they
// hold, the batch is valid.
TEST_F(WriteSafetyTest, BytesUnderANullStringSlotAreNotCheckedAsUtf8) {
  const int32_t offsets[] = {0, 2, 4, 6};
  auto offset_buffer = arrow::Buffer::Wrap(offsets, 4);
  auto data = arrow::Buffer::FromString("ok\xff\xfeok");
  const uint8_t validity[] = {0b101};  // row 1 is null
  auto validity_buffer = arrow::Buffer::Wrap(validity, 1);
  auto labels =
      std::make_shared<arrow::StringArray>(3, offset_buffer, data, validity_buffer, 1);
  arrow::UInt64Builder numbers;
  ASSERT_OK(numbers.AppendValues({1, 2, 3}));
  auto schema = arrow::schema(
      {arrow::field("block_num", arrow::uint64()), arrow::field("label", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 3, {*numbers.Finish(), labels});
  ASSERT_OK(WriteBatches(store_, {batch}).status());
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(WriteSafetyTest, Decimal256IsNarrowedWhenItFitsAndStoredAsTextWhenWider) {
  arrow::Decimal256Builder fits(arrow::decimal256(20, 0));
  ASSERT_OK(fits.Append(arrow::Decimal256(12345)));
  ASSERT_OK(
      fits.Append(arrow::Decimal256::FromString("18446744073709551615").ValueOrDie()));
  auto schema = arrow::schema({arrow::field("value", arrow::decimal256(20, 0)),
                               arrow::field("n", arrow::int64())});
  arrow::Int64Builder n;
  ASSERT_OK(n.AppendValues({1, 2}));
  auto batch = arrow::RecordBatch::Make(schema, 2, {*fits.Finish(), *n.Finish()});
  ASSERT_OK(WriteBatches(store_, {batch}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->schema()->field(0)->type()->ToString(), "decimal128(20, 0)");

  arrow::Decimal256Builder wide(arrow::decimal256(40, 0));
  ASSERT_OK(wide.Append(arrow::Decimal256(1)));
  auto wide_schema = arrow::schema(
      {arrow::field("big", arrow::decimal256(40, 0)), arrow::field("n", arrow::int64())});
  arrow::Int64Builder one;
  ASSERT_OK(one.Append(1));
  auto wide_batch =
      arrow::RecordBatch::Make(wide_schema, 1, {*wide.Finish(), *one.Finish()});
  // Wider than Delta's decimal: stored as its decimal text (the default wide-integer
  // policy, docs/wide-integers.md).
  auto memory = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(WriteBatches(memory, {wide_batch}).status());
  ASSERT_OK_AND_ASSIGN(auto wide_snapshot, Snapshot::Load(memory));
  EXPECT_EQ(wide_snapshot->schema()->field(0)->type()->ToString(), "string");
}

TEST_F(WriteSafetyTest, PermanentStorageErrorIsNotRetriedAndLeavesNoDataFiles) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  auto faulty = FailingCommits(local, "_delta_log/00000000000000000001.json",
                               "Read-only file system", "EROFS");
  auto before = AllFiles(dir.path());
  auto written = WriteBatches(faulty, {Blocks(3, 6)});
  EXPECT_THAT(written, HasErrorCode(ErrorCode::kStorageError));
  EXPECT_EQ(ClassifyError(written.status()), ErrorClass::kStorage);
  EXPECT_FALSE(IsTransientError(written.status()));
  EXPECT_EQ(faulty->faults_fired(), 1);  // one attempt: a read-only disk stays read-only
  EXPECT_EQ(AllFiles(dir.path()), before);
}

TEST_F(WriteSafetyTest, TransientCommitFailureIsRetried) {
  auto faulty = std::make_shared<storage::FaultStore>(store_);
  storage::FaultRule flaky;
  flaky.op = storage::StoreOp::kPut;
  flaky.path_contains = "_delta_log/00000000000000000000.json";
  flaky.nth = 1;
  faulty->AddRule(flaky);
  ASSERT_OK(WriteBatches(faulty, {Blocks(0, 3)}).status());
  EXPECT_EQ(faulty->faults_fired(), 1);
}

TEST_F(WriteSafetyTest, LosingConcurrentOverwriteRemovesItsDataFiles) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  ASSERT_OK_AND_ASSIGN(auto loser,
                       TableWriter::Open(local, Blocks(0, 1)->schema(), overwrite));
  // A concurrent load adds a column: the overwrite's schema no longer is the table's.
  arrow::Int64Builder extra;
  ASSERT_OK(extra.AppendValues({7}));
  auto widened =
      *Blocks(3, 4)->AddColumn(2, arrow::field("extra", arrow::int64()), *extra.Finish());
  ASSERT_OK(WriteBatches(local, {widened}).status());
  const auto data_before = DataFiles(dir.path());
  ASSERT_OK(loser->Write(Blocks(10, 20)));
  EXPECT_THAT(loser->Commit(), HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(DataFiles(dir.path()), data_before);
}

TEST_F(WriteSafetyTest, AbortAfterASuccessfulCommitKeepsTheCommittedFiles) {
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(store_, Blocks(0, 1)->schema(), {}));
  ASSERT_OK(writer->Write(Blocks(0, 5)));
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK(writer->Abort());  // e.g. a caller that gives up on what follows the commit
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 5));
}

TEST_F(WriteSafetyTest, OverwriteRebasedOverConcurrentChangesReplacesThemToo) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}).status());
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(store_, Blocks(0, 1)->schema(), overwrite));
  ASSERT_OK(writer->Write(Blocks(10, 20)));
  // Meanwhile: a merge rewrites the file the overwrite removes, and an append adds one.
  MergeOptions merge;
  merge.keys = {"block_num"};
  auto source = Blocks(1, 2);
  ASSERT_OK(MergeRows(store_, source->schema(), {source}, merge).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(3, 5)}).status());
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(10, 20));
}

TEST_F(WriteSafetyTest, FailedCommitOfAnyKindDeletesTheFilesItWrote) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  for (uint64_t start : {0, 3, 6})
    ASSERT_OK(WriteBatches(local, {Blocks(start, start + 3)}).status());
  const auto before = AllFiles(dir.path());
  auto faulty =
      FailingCommits(local, "_delta_log/0000", "No space left on device", "ENOSPC");
  TableWriteOptions options;
  options.files.max_rows_per_file = 2;  // several files
  EXPECT_THAT(WriteBatches(faulty, {Blocks(3, 12)}, options),
              StatusHasMessage("No space left"));
  EXPECT_EQ(AllFiles(dir.path()), before);  // no data file, no lease, no temporary file
  EXPECT_THAT(Optimize(faulty), StatusHasMessage("No space left"));
  EXPECT_EQ(AllFiles(dir.path()), before);
  EXPECT_THAT(DeleteRows(faulty, "block_num = 1"), StatusHasMessage("No space left"));
  EXPECT_EQ(AllFiles(dir.path()), before);
}

TEST_F(WriteSafetyTest, FullVacuumWithZeroRetentionLeavesAWriteInFlightAlone) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  TableWriteOptions options;
  options.files.max_rows_per_file = 2;
  options.files.num_threads = 1;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(local, Blocks(0, 1)->schema(), options));
  ASSERT_OK(writer->Write(Blocks(3, 9)));  // three files closed, none committed
  ASSERT_GE(DataFiles(dir.path()).size(), 3u);
  VacuumOptions vacuum;
  vacuum.full = true;
  vacuum.retention_hours = 0;
  vacuum.enforce_retention = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_OK_AND_ASSIGN(auto vacuumed, Vacuum(local, vacuum));
  EXPECT_TRUE(vacuumed.files.empty());
  ASSERT_OK(writer->Commit().status());
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(local));
  EXPECT_EQ(rows, Range(0, 9));
  // Every file the log names exists.
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(local));
  for (const auto& file : snapshot->files()) {
    EXPECT_TRUE(local->Head(snapshot->FileKey(file.path)).ok()) << file.path;
  }
}

TEST_F(WriteSafetyTest, CommitRefusesFilesDeletedByAVacuumThatIgnoredTheLease) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  const auto before_write = DataFiles(dir.path());
  TableWriteOptions options;
  options.files.max_rows_per_file = 2;
  options.files.num_threads = 1;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(local, Blocks(0, 1)->schema(), options));
  ASSERT_OK(writer->Write(Blocks(3, 9)));
  // Another engine's vacuum with its retention check off knows nothing of leases.
  std::vector<std::string> written;
  for (const auto& file : DataFiles(dir.path())) {
    if (std::find(before_write.begin(), before_write.end(), file) == before_write.end()) {
      written.push_back(file);
    }
  }
  ASSERT_FALSE(written.empty());
  fs::remove(dir.path() + "/" + written.front());
  auto committed = writer->Commit();
  EXPECT_THAT(committed, HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_THAT(committed, StatusHasMessage("was deleted before its commit"));
  ASSERT_OK_AND_ASSIGN(auto latest, Snapshot::Load(local));
  EXPECT_EQ(latest->version(), 0);
  EXPECT_EQ(DataFiles(dir.path()), before_write);  // the rest of the write is gone too
}

// A writer stopped for longer than the lease TTL: a vacuum removes its lease and its
// files; when the writer wakes, its heartbeat writes the lease again. The commit must
// still see that the lease was lost and check its files (on an object store too), not
// commit files that are gone.
TEST_F(WriteSafetyTest, ALeaseRemovedByAVacuumAndRefreshedAgainIsNotTrusted) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}).status());
  ASSERT_OK_AND_ASSIGN(auto lease, WriteLease::Acquire(store_, LeaseKind::kWrite, {},
                                                       std::chrono::milliseconds(10)));
  TableWriteOptions options;
  options.lease = lease;
  options.files.max_rows_per_file = 2;
  options.files.num_threads = 1;
  ASSERT_OK_AND_ASSIGN(auto writer,
                       TableWriter::Open(store_, Blocks(0, 1)->schema(), options));
  ASSERT_OK(writer->Write(Blocks(3, 9)));
  // What a vacuum that judged the lease dead does: the lease goes, then the files.
  ASSERT_OK(store_->Delete(std::string(kLeaseDir) + "/" + lease->token() + ".json"));
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("", ""));
  int deleted = 0;
  for (const auto& object : objects) {
    if (object.path.find(lease->token()) != std::string::npos &&
        object.path.rfind(kLeaseDir, 0) != 0) {
      ASSERT_OK(store_->Delete(object.path));
      ++deleted;
    }
  }
  ASSERT_GT(deleted, 0);
  // The heartbeat runs meanwhile and writes the lease again.
  for (int i = 0; i < 200; ++i) {
    if (store_->Head(std::string(kLeaseDir) + "/" + lease->token() + ".json").ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_THAT(writer->Commit(), HasErrorCode(ErrorCode::kCommitConflict));
  ASSERT_OK_AND_ASSIGN(auto latest, Snapshot::Load(store_));
  EXPECT_EQ(latest->version(), 0);
  ASSERT_OK(lease->Release());
}

TEST_F(WriteSafetyTest, VacuumRemovesWhatACrashedWriterLeft) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  const auto before = AllFiles(dir.path());
  // A writer of a process that no longer exists: its lease, an uncommitted data file
  // named with the lease's token, and a temporary file of an interrupted put.
  ProcessIdentity dead = CurrentProcess();
  dead.start_ticks += 1;  // same PID, another start: that process has exited
  const std::string token = "0123456789abcdef";
  fs::create_directories(dir.path() + "/_ampdelta_leases");
  std::ofstream(dir.path() + "/_ampdelta_leases/" + token + ".json")
      << R"({"token":")" << token << R"(","kind":"write","owner":")" << dead.ToString()
      << R"(","paths":[]})";
  std::ofstream(dir.path() + "/part-00000-x-" + token + "-c000.zstd.parquet")
      << "partial";
  std::ofstream(dir.path() + "/_delta_log/.ampdelta-tmp-" + dead.ToString() +
                "-00000000000000000001.json.abc")
      << "{}";
  VacuumOptions vacuum;
  vacuum.full = true;
  vacuum.retention_hours = 0;
  vacuum.enforce_retention = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_OK_AND_ASSIGN(auto vacuumed, Vacuum(local, vacuum));
  EXPECT_EQ(vacuumed.leases_expired, 1);
  EXPECT_EQ(vacuumed.temporary_files.size(), 1u);
  EXPECT_EQ(vacuumed.files.size(), 1u);
  // Only the vacuum's own two commits were added.
  auto after = AllFiles(dir.path());
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  EXPECT_EQ(added, (std::vector<std::string>{"_delta_log/00000000000000000001.json",
                                             "_delta_log/00000000000000000002.json"}));
}

// A partition folder of a column whose name starts with '_' is no hidden folder: what a
// crashed writer left in it is garbage like anywhere else (as Spark's VACUUM sees it).
TEST_F(WriteSafetyTest, FullVacuumCleansPartitionFoldersOfUnderscoreColumns) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  TableWriteOptions partitioned;
  partitioned.partition_by = {"_shard"};
  ASSERT_OK(
      WriteBatches(local, {Renamed(Blocks(0, 3), {"block_num", "_shard"})}, partitioned)
          .status());
  ASSERT_TRUE(fs::is_directory(dir.path() + "/_shard=eth"));
  // An uncommitted file of a writer that no longer exists (its lease is gone).
  std::ofstream(dir.path() +
                "/_shard=eth/part-00000-x-0123456789abcdef-c000.zstd.parquet")
      << "partial";
  VacuumOptions vacuum;
  vacuum.full = true;
  vacuum.retention_hours = 0;
  vacuum.enforce_retention = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_OK_AND_ASSIGN(auto vacuumed, Vacuum(local, vacuum));
  EXPECT_EQ(vacuumed.files,
            std::vector<std::string>{
                "_shard=eth/part-00000-x-0123456789abcdef-c000.zstd.parquet"});
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(local));
  EXPECT_EQ(rows, Range(0, 3));
}

TEST_F(WriteSafetyTest, LiteVacuumDeletesTheDeletionVectorsOfTheFilesItDeletes) {
  // A tombstone with a deletion vector: the DV file goes with its data file.
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto local, storage::LocalStore::Make(dir.path()));
  ASSERT_OK(WriteBatches(local, {Blocks(0, 3)}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(local));
  Add file = *snapshot->files().begin();
  DeletionVectorDescriptor dv;
  dv.storage_type = "u";
  dv.path_or_inline_dv = "ab^-aqEH.-t@S}K{vb[*k^";
  dv.offset = 1;
  dv.size_in_bytes = 10;
  dv.cardinality = 1;
  auto dv_path = UuidDeletionVectorPath(dv.path_or_inline_dv);
  ASSERT_OK(dv_path.status());
  fs::create_directories(fs::path(dir.path() + "/" + *dv_path).parent_path());
  std::ofstream(dir.path() + "/" + *dv_path) << "0123456789abcdef";
  // As a deletion-vector DELETE writes it: the file again, now with a DV.
  Add with_dv = file;
  with_dv.deletion_vector = dv;
  Transaction mark(local, snapshot);
  mark.RemoveFiles({RemoveFor(file)});
  mark.AddFiles({with_dv});
  ASSERT_OK(mark.Commit().status());
  ASSERT_OK_AND_ASSIGN(auto marked, snapshot->Update());
  Remove gone = RemoveFor(with_dv);
  gone.deletion_timestamp = NowMs() - 3600 * 1000;  // an hour ago
  Transaction txn(local, marked);
  txn.RemoveFiles({gone});
  ASSERT_OK(txn.Commit().status());
  VacuumOptions vacuum;
  vacuum.retention_hours = 0;
  vacuum.enforce_retention = false;
  ASSERT_OK_AND_ASSIGN(auto vacuumed, Vacuum(local, vacuum));
  EXPECT_EQ(vacuumed.files.size(), 2u);
  EXPECT_FALSE(fs::exists(dir.path() + "/" + *dv_path));
}

TEST_F(WriteSafetyTest, EmptyDeletePredicateIsAnErrorAndDeleteAllIsExplicit) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 5)}).status());
  EXPECT_THAT(DeleteRows(store_, " "), HasErrorCode(ErrorCode::kInvalidInput));
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows.size(), 5u);
  ASSERT_OK(DeleteAllRows(store_).status());
  ASSERT_OK_AND_ASSIGN(auto none, BlockNumbers(store_));
  EXPECT_TRUE(none.empty());
}

TEST_F(WriteSafetyTest, CheckpointRefusesATableWithWriterFeaturesAmpdeltaLacks) {
  const std::string commit =
      R"({"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}})"
      "\n"
      R"({"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["icebergCompatV2"]}})"
      "\n"
      R"({"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}})"
      "\n";
  ASSERT_OK(store_->Put("_delta_log/00000000000000000000.json",
                        arrow::Buffer::FromString(commit),
                        storage::PutMode::kCreateIfAbsent));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));  // readable, not writable
  EXPECT_THAT(WriteCheckpoint(*snapshot, NowMs()),
              HasErrorCode(ErrorCode::kUnsupportedFeature));
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("_delta_log/", ""));
  EXPECT_EQ(objects.size(), 1u);
}

TEST_F(WriteSafetyTest, LastCheckpointPastTheLatestVersionIsRepaired) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 2)}).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(2, 4)}).status());
  ASSERT_OK(store_->Put("_delta_log/_last_checkpoint",
                        arrow::Buffer::FromString(R"({"version":99,"size":1})"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->version(), 1);
  ASSERT_OK(WriteCheckpoint(*snapshot, NowMs()).status());
  EXPECT_EQ(ReadLastCheckpointHint(*store_), std::optional<Version>(1));
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 4));
}

// A restore makes the table equal its target version whatever lands meanwhile: a commit
// that removes a file the restore keeps (a compaction of it, a delete of some of its
// rows) must not take that file's rows out of the restored table.
TEST_F(WriteSafetyTest,
       RestoreKeepsTheTargetsRowsWhenAConcurrentCompactionOrDeleteLands) {
  for (const bool compaction : {true, false}) {
    SCOPED_TRACE(compaction ? "concurrent OPTIMIZE" : "concurrent DELETE");
    auto inner = std::make_shared<storage::MemoryStore>();
    for (uint64_t start : {0, 3, 6, 9}) {
      ASSERT_OK(WriteBatches(inner, {Blocks(start, start + 3)}).status());
    }
    auto faulty = std::make_shared<storage::FaultStore>(inner);
    storage::FaultRule rule;
    rule.op = storage::StoreOp::kPut;
    rule.path_contains = kLeaseDir;  // the restore's lease: after it read the table
    rule.fail = false;
    rule.before = [&] {
      if (compaction) {
        ASSERT_OK(Optimize(inner).status());
      } else {
        ASSERT_OK(DeleteRows(inner, "block_num = 1").status());
      }
    };
    faulty->AddRule(rule);
    ASSERT_OK(Restore(faulty, 2).status());  // blocks 0..8
    ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(inner));
    EXPECT_EQ(rows, Range(0, 9));
    ASSERT_OK_AND_ASSIGN(auto latest, Snapshot::Load(inner));
    for (const auto& file : latest->files()) {
      EXPECT_TRUE(inner->Head(latest->FileKey(file.path)).ok()) << file.path;
    }
  }
}

// delta.dataSkippingStatsColumns names columns in any case, as every Delta name does, and
// holds from the table's first commit on.
TEST_F(WriteSafetyTest, StatsColumnsPropertyIgnoresCaseFromTheFirstCommit) {
  TableWriteOptions options;
  options.configuration = {{"delta.dataSkippingStatsColumns", "NETWORK"}};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}, options).status());
  ASSERT_OK(WriteBatches(store_, {Blocks(3, 6)}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_EQ(snapshot->files().size(), 2u);
  for (const auto& file : snapshot->files()) {
    ASSERT_TRUE(file.stats.has_value());
    const auto stats = nlohmann::json::parse(*file.stats);
    EXPECT_TRUE(stats["minValues"].contains("network")) << *file.stats;
    EXPECT_FALSE(stats["minValues"].contains("block_num")) << *file.stats;
  }
}

// An overwrite that replaces the schema keeps the table's partitioning when the new rows
// have those columns, in whatever case they spell them.
TEST_F(WriteSafetyTest,
       OverwriteReplacingTheSchemaKeepsPartitioningSpelledInAnotherCase) {
  TableWriteOptions partitioned;
  partitioned.partition_by = {"network"};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 4)}, partitioned).status());
  arrow::StringBuilder numbers;
  ASSERT_OK(numbers.AppendValues({"a", "b"}));
  arrow::StringBuilder networks;
  ASSERT_OK(networks.AppendValues({"eth", "base"}));
  auto replacement =
      arrow::RecordBatch::Make(arrow::schema({arrow::field("BLOCK_NUM", arrow::utf8()),
                                              arrow::field("NETWORK", arrow::utf8())}),
                               2, {*numbers.Finish(), *networks.Finish()});
  TableWriteOptions overwrite;
  overwrite.mode = SaveMode::kOverwrite;
  overwrite.overwrite_schema = true;
  ASSERT_OK(WriteBatches(store_, {replacement}, overwrite).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->schema()->field(0)->type()->id(), arrow::Type::STRING);
  EXPECT_EQ(snapshot->partition_columns(), std::vector<std::string>{"NETWORK"});
  for (const auto& file : snapshot->files()) {
    EXPECT_EQ(file.partition_values.size(), 1u) << file.path;
  }
}

// Another engine may record partition columns in another case than the schema spells
// them (Spark resolves names case-insensitively): the table reads, and appends to it
// work.
TEST_F(WriteSafetyTest, PartitionColumnsRecordedInAnotherCaseThanTheSchemaAreWritable) {
  TableWriteOptions partitioned;
  partitioned.partition_by = {"network"};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 3)}, partitioned).status());
  const std::string key = "_delta_log/00000000000000000000.json";
  ASSERT_OK_AND_ASSIGN(auto bytes, store_->Get(key));
  std::string text = bytes->ToString();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"("partitionColumns":["network"])", R"("partitionColumns":["Network"])"},
           {R"("partitionValues":{"network":)", R"("partitionValues":{"Network":)"}}) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from << " in " << text;
    text.replace(at, from.size(), to);
  }
  ASSERT_OK(
      store_->Put(key, arrow::Buffer::FromString(text), storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 3));
  ASSERT_OK(WriteBatches(store_, {Blocks(3, 5, "base")}).status());
  ASSERT_OK_AND_ASSIGN(auto all, BlockNumbers(store_));
  EXPECT_EQ(all, Range(0, 5));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  for (const auto& file : snapshot->files()) {
    EXPECT_EQ(file.partition_values.count("Network"), 1u) << file.path;
  }
  ASSERT_OK(DeleteRows(store_, "network = 'base'").status());
  ASSERT_OK_AND_ASSIGN(auto left, BlockNumbers(store_));
  EXPECT_EQ(left, Range(0, 3));
}

// A _last_checkpoint naming an older version that has no checkpoint (deleted, never
// completed) makes deltalake refuse the table; the next commit repairs it too, once.
TEST_F(WriteSafetyTest, LastCheckpointNamingAMissingOlderCheckpointIsRepaired) {
  for (uint64_t start : {0, 2, 4})
    ASSERT_OK(WriteBatches(store_, {Blocks(start, start + 2)}).status());
  ASSERT_OK(store_->Put("_delta_log/_last_checkpoint",
                        arrow::Buffer::FromString(R"({"version":1,"size":1})"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK(WriteBatches(store_, {Blocks(6, 8)}).status());  // version 3
  const auto hint = ReadLastCheckpointHint(*store_);
  ASSERT_TRUE(hint.has_value());
  EXPECT_EQ(*hint, 3);
  ASSERT_OK_AND_ASSIGN(auto objects, store_->List("_delta_log/", ""));
  int checkpoints = 0;
  for (const auto& object : objects) {
    if (object.path.find(".checkpoint.") != std::string::npos) ++checkpoints;
  }
  EXPECT_EQ(checkpoints, 1);
  // Later commits from an updated snapshot do not checkpoint again.
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  TableWriteOptions options;
  options.read_snapshot = snapshot;
  ASSERT_OK(WriteBatches(store_, {Blocks(8, 10)}, options).status());
  ASSERT_OK_AND_ASSIGN(auto updated, snapshot->Update());
  options.read_snapshot = updated;
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 12)}, options).status());
  EXPECT_EQ(ReadLastCheckpointHint(*store_), std::optional<Version>(3));
  ASSERT_OK_AND_ASSIGN(auto rows, BlockNumbers(store_));
  EXPECT_EQ(rows, Range(0, 12));
}

}  // namespace
}  // namespace ampdelta::delta
