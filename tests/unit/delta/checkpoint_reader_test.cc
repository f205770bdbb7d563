// Hostile checkpoint input: damaged Parquet and Parquet strings that are not UTF-8 are
// errors (or, for statistics, left out), never a crash or an exception.

#include "ampdelta/delta/log/checkpoint_reader.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/io/memory.h>
#include <arrow/table.h>
#include <parquet/arrow/writer.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

std::shared_ptr<arrow::Array> Strings(const std::vector<std::string>& values) {
  arrow::StringBuilder builder;
  for (const auto& value : values) EXPECT_OK(builder.Append(value));
  return *builder.Finish();
}

std::shared_ptr<arrow::Array> Int64s(const std::vector<int64_t>& values) {
  arrow::Int64Builder builder;
  for (int64_t value : values) EXPECT_OK(builder.Append(value));
  return *builder.Finish();
}

std::shared_ptr<arrow::Array> Struct(const arrow::ArrayVector& children,
                                     const std::vector<std::string>& names) {
  return *arrow::StructArray::Make(children, names);
}

// A one-column checkpoint: `add` rows with the given paths and a stats_parsed minimum.
std::shared_ptr<arrow::Buffer> AddCheckpoint(const std::vector<std::string>& paths,
                                             const std::vector<std::string>& minimums) {
  auto stats = Struct(
      {Int64s(std::vector<int64_t>(paths.size(), 1)), Struct({Strings(minimums)}, {"s"})},
      {"numRecords", "minValues"});
  auto add =
      Struct({Strings(paths), Int64s(std::vector<int64_t>(paths.size(), 10)), stats},
             {"path", "size", "stats_parsed"});
  auto table =
      arrow::Table::Make(arrow::schema({arrow::field("add", add->type())}), {add});
  auto sink = *arrow::io::BufferOutputStream::Create();
  EXPECT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink));
  return *sink->Finish();
}

std::string ReadFixture(const std::string& relative) {
  std::ifstream in(testing::SourceDir() + "/../shared/fixtures/" + relative,
                   std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A struct column of `children` whose row i is null unless `valid[i]`.
std::shared_ptr<arrow::Array> StructWithNulls(const arrow::ArrayVector& children,
                                              const std::vector<std::string>& names,
                                              const std::vector<bool>& valid) {
  arrow::TypedBufferBuilder<bool> bits;
  for (bool v : valid) EXPECT_OK(bits.Append(v));
  std::shared_ptr<arrow::Buffer> bitmap = *bits.Finish();
  const int64_t nulls =
      static_cast<int64_t>(std::count(valid.begin(), valid.end(), false));
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (size_t i = 0; i < children.size(); ++i)
    fields.push_back(arrow::field(names[i], children[i]->type()));
  return std::make_shared<arrow::StructArray>(arrow::struct_(fields),
                                              static_cast<int64_t>(valid.size()),
                                              children, bitmap, nulls);
}

TEST(CheckpointReaderTest, ActionsComeInTheFilesRowOrderAcrossColumnsAndBatches) {
  // Every third row a remove, the others adds; more rows than one read batch (64Ki).
  constexpr int kRows = 70'000;
  std::vector<std::string> paths;
  std::vector<bool> is_add;
  for (int i = 0; i < kRows; ++i) {
    paths.push_back("f-" + std::to_string(i));
    is_add.push_back(i % 3 != 1);
  }
  std::vector<bool> is_remove;
  for (bool add : is_add) is_remove.push_back(!add);
  const auto numbers = Int64s(std::vector<int64_t>(kRows, 7));
  auto add = StructWithNulls({Strings(paths), numbers, numbers},
                             {"path", "size", "modificationTime"}, is_add);
  auto remove = StructWithNulls({Strings(paths), numbers}, {"path", "deletionTimestamp"},
                                is_remove);
  auto table = arrow::Table::Make(arrow::schema({arrow::field("add", add->type()),
                                                 arrow::field("remove", remove->type())}),
                                  {add, remove});
  auto sink = *arrow::io::BufferOutputStream::Create();
  ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink));
  storage::MemoryStore store;
  ASSERT_OK(
      store.Put(CheckpointPath(1), *sink->Finish(), storage::PutMode::kCreateIfAbsent));
  ASSERT_OK_AND_ASSIGN(auto actions, ReadParquetActions(store, CheckpointPath(1)));
  ASSERT_EQ(actions.size(), static_cast<size_t>(kRows));
  for (int i = 0; i < kRows; ++i) {
    const Action& action = actions[static_cast<size_t>(i)];
    if (is_add[static_cast<size_t>(i)]) {
      ASSERT_TRUE(std::holds_alternative<Add>(action)) << i;
      ASSERT_EQ(std::get<Add>(action).path, paths[static_cast<size_t>(i)]);
    } else {
      ASSERT_TRUE(std::holds_alternative<Remove>(action)) << i;
      ASSERT_EQ(std::get<Remove>(action).path, paths[static_cast<size_t>(i)]);
    }
  }
}

TEST(CheckpointReaderTest, GarbageAndEmptyFilesAreCorruptNotACrash) {
  storage::MemoryStore store;
  for (const std::string& bytes :
       {std::string(), std::string("PAR1"), std::string("PAR1PAR1"),
        std::string(100, '\xff'), std::string("PAR1") + std::string(64, '\0') + "PAR1"}) {
    ASSERT_OK(store.Put(CheckpointPath(1), arrow::Buffer::FromString(bytes),
                        storage::PutMode::kOverwrite));
    EXPECT_THAT(ReadParquetActions(store, CheckpointPath(1)),
                testing::HasErrorCode(ErrorCode::kCorruptLog))
        << bytes.size();
  }
}

TEST(CheckpointReaderTest, TruncatedCheckpointIsAnErrorAtEveryLength) {
  const std::string bytes = ReadFixture(
      "delta-rs/simple_table_with_checkpoint/_delta_log/"
      "00000000000000000010.checkpoint.parquet");
  ASSERT_GT(bytes.size(), 1000u);
  storage::MemoryStore store;
  ASSERT_OK(store.Put(CheckpointPath(10), arrow::Buffer::FromString(bytes),
                      storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto whole, ReadParquetActions(store, CheckpointPath(10)));
  EXPECT_FALSE(whole.empty());
  for (size_t length = 0; length < bytes.size(); length += 37) {
    ASSERT_OK(store.Put(CheckpointPath(10),
                        arrow::Buffer::FromString(bytes.substr(0, length)),
                        storage::PutMode::kOverwrite));
    EXPECT_FALSE(ReadParquetActions(store, CheckpointPath(10)).ok()) << length;
  }
}

TEST(CheckpointReaderTest, StatsParsedThatIsNotUtf8BecomesNoStats) {
  storage::MemoryStore store;
  ASSERT_OK(store.Put(CheckpointPath(1),
                      AddCheckpoint({"a.parquet", "b.parquet"}, {"ok", "\xff"}),
                      storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto actions, ReadParquetActions(store, CheckpointPath(1)));
  ASSERT_EQ(actions.size(), 2u);
  const auto& good = std::get<Add>(actions[0]);
  ASSERT_TRUE(good.stats.has_value());
  EXPECT_NE(good.stats->find(R"("s":"ok")"), std::string::npos) << *good.stats;
  // A bound JSON cannot carry: the file is kept, without statistics (no data skipping).
  EXPECT_FALSE(std::get<Add>(actions[1]).stats.has_value());
}

TEST(CheckpointReaderTest, PathThatIsNotUtf8ReadsButCannotBeRewritten) {
  storage::MemoryStore store;
  ASSERT_OK(store.Put(CheckpointPath(1), AddCheckpoint({"p\xc3.parquet"}, {"x"}),
                      storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto actions, ReadParquetActions(store, CheckpointPath(1)));
  ASSERT_EQ(actions.size(), 1u);
  // Writing it to a commit (a remove, a new checkpoint) is an error, not an exception.
  EXPECT_THAT(EncodeCommit(actions), testing::StatusHasMessage("add.path"));
}

TEST(CheckpointReaderTest, CheckpointOfATableWithAPathThatIsNotUtf8IsRefused) {
  // Checkpoint 1 holds the files; commit 2 the protocol and metadata.
  auto store = std::make_shared<storage::MemoryStore>();
  ASSERT_OK(store->Put(CheckpointPath(1),
                       AddCheckpoint({"ok.parquet", "p\xc3.parquet"}, {"x", "y"}),
                       storage::PutMode::kOverwrite));
  const std::string commit =
      R"({"protocol":{"minReaderVersion":1,"minWriterVersion":2}})"
      "\n"
      R"({"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"s\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{},"createdTime":1}})"
      "\n";
  ASSERT_OK(store->Put("_delta_log/00000000000000000002.json",
                       arrow::Buffer::FromString(commit), storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store));
  ASSERT_EQ(snapshot->files().size(), 2u);
  // A checkpoint's string columns must be UTF-8: no checkpoint file is written.
  EXPECT_THAT(WriteCheckpoint(*snapshot, 1'000), testing::StatusHasMessage("add.path"));
  EXPECT_FALSE(store->Get(CheckpointPath(2)).ok());
}

TEST(CheckpointReaderTest, SidecarWithAnEmptyPathIsCorrupt) {
  auto sidecar = Struct({Strings({""}), Int64s({1}), Int64s({0})},
                        {"path", "sizeInBytes", "modificationTime"});
  auto table = arrow::Table::Make(
      arrow::schema({arrow::field("sidecar", sidecar->type())}), {sidecar});
  auto sink = *arrow::io::BufferOutputStream::Create();
  ASSERT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), sink));
  storage::MemoryStore store;
  const std::string path =
      std::string(kLogDir) +
      "/00000000000000000001.checkpoint.00000000-0000-0000-0000-000000000000.parquet";
  ASSERT_OK(store.Put(path, *sink->Finish(), storage::PutMode::kOverwrite));
  CheckpointFiles checkpoint;
  checkpoint.version = 1;
  checkpoint.files.push_back(*ParseLogPath(path));
  EXPECT_THAT(ReadCheckpoint(store, checkpoint),
              testing::StatusHasMessage("names a sidecar with an empty path"));
}

}  // namespace
}  // namespace ampdelta::delta
