#include "ampdelta/delta/log/snapshot.h"

#include <arrow/buffer.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/checkpoint_reader.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/txn/transaction.h"
#include "ampdelta/storage/memory_store.h"
#include "ampdelta/util/clock.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::Blocks;
using test_tables::WriteBatches;

// The protocol and metadata that start a table without columns.
std::vector<Action> NewTableActions() {
  Metadata metadata;
  metadata.id = "t";
  metadata.schema_string = R"({"type":"struct","fields":[]})";
  return {Protocol{1, 2, std::nullopt, std::nullopt}, metadata};
}

class SnapshotTest : public ::testing::Test {
 protected:
  std::shared_ptr<storage::MemoryStore> store_ = std::make_shared<storage::MemoryStore>();
};

TEST_F(SnapshotTest, HugeSizesAndCountsFromTheLogDoNotOverflow) {
  std::vector<Action> actions = NewTableActions();
  for (const char* path : {"a.parquet", "b.parquet"}) {
    Add add;
    add.path = path;
    add.size = INT64_MAX;
    add.stats = R"({"numRecords":9223372036854775807})";
    actions.push_back(add);
  }
  ASSERT_OK_AND_ASSIGN(std::string commit, EncodeCommit(actions));
  ASSERT_OK(store_->Put(CommitPath(0), arrow::Buffer::FromString(std::move(commit)),
                        storage::PutMode::kCreateIfAbsent));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->SumFileSizes(), INT64_MAX);
  EXPECT_EQ(snapshot->CountLiveRecords(), std::nullopt);
}

TEST_F(SnapshotTest, MissingTableIsNotFound) {
  EXPECT_THAT(Snapshot::Load(store_), testing::HasErrorCode(ErrorCode::kNotFound));
}

TEST_F(SnapshotTest, GapsAndMissingVersionZeroAreCorruptLogs) {
  for (int i = 0; i < 4; ++i)
    ASSERT_OK(WriteBatches(store_, {Blocks(i, i + 1)}).status());
  ASSERT_OK(store_->Delete(CommitPath(2)));
  EXPECT_THAT(Snapshot::Load(store_), testing::StatusHasMessage("not contiguous"));
  ASSERT_OK_AND_ASSIGN(auto early, Snapshot::Load(store_, {1, {}}));
  EXPECT_EQ(early->version(), 1);
  ASSERT_OK(store_->Delete(CommitPath(0)));
  EXPECT_THAT(Snapshot::Load(store_, {1, {}}),
              testing::StatusHasMessage("commit 0 is missing"));
  EXPECT_THAT(Snapshot::Load(store_, {9, {}}),
              testing::StatusHasMessage("does not exist"));
}

TEST_F(SnapshotTest, MissingProtocolOrMetadataIsReported) {
  Add add;
  add.path = "x.parquet";
  ASSERT_OK_AND_ASSIGN(std::string commit, EncodeCommit({add}));
  ASSERT_OK(store_->Put(CommitPath(0), arrow::Buffer::FromString(std::move(commit)),
                        storage::PutMode::kCreateIfAbsent));
  EXPECT_THAT(Snapshot::Load(store_), testing::StatusHasMessage("no protocol action"));
}

TEST_F(SnapshotTest, ReplayKeepsLatestTxnAndTombstones) {
  TableWriteOptions first;
  first.app_transaction = SetTransaction{"app", 1, {}};
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 5)}, first).status());
  TableWriteOptions second;
  second.app_transaction = SetTransaction{"app", 2, {}};
  second.mode = SaveMode::kOverwrite;
  ASSERT_OK(WriteBatches(store_, {Blocks(5, 6)}, second).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->AppTransactionVersion("app"), std::optional<int64_t>(2));
  EXPECT_EQ(snapshot->files().size(), 1u);
  EXPECT_EQ(snapshot->tombstones().size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto old, Snapshot::Load(store_, {0, {}}));
  EXPECT_EQ(old->AppTransactionVersion("app"), std::optional<int64_t>(1));
}

TEST_F(SnapshotTest, TheLastActionOfEachFileWinsWhateverItsPathsSpelling) {
  auto add = [](const char* path, int64_t size) {
    Add file;
    file.path = path;
    file.size = size;
    return Action(file);
  };
  auto remove = [](const char* path) {
    Remove file;
    file.path = path;
    return Action(file);
  };
  const std::string absolute_a = store_->root_uri() + "/a.parquet";
  // Unsorted, with a file added twice in one commit.
  std::vector<Action> created = NewTableActions();
  for (Action file : {add("z.parquet", 1), add("b.parquet", 1), add("a.parquet", 1),
                      add("c%20d.parquet", 1), add("a.parquet", 2)}) {
    created.push_back(std::move(file));
  }
  const std::vector<std::vector<Action>> commits = {
      created,
      // Removed, and re-added under other spellings of the same key.
      {remove("b.parquet"), add("c d.parquet", 3), add(absolute_a.c_str(), 5)},
      // Re-added after its removal; a file that was never added gets a tombstone.
      {add("b.parquet", 4), remove("y.parquet"), remove("z.parquet")},
  };
  for (size_t v = 0; v < commits.size(); ++v) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeCommit(commits[v]));
    ASSERT_OK(store_->Put(CommitPath(static_cast<Version>(v)),
                          arrow::Buffer::FromString(std::move(bytes)),
                          storage::PutMode::kCreateIfAbsent));
  }
  const auto expect_final = [](const Snapshot& snapshot) {
    std::vector<std::pair<std::string, int64_t>> files;
    for (const auto& file : snapshot.files()) {
      files.emplace_back(snapshot.FileKey(file.path), file.size);
    }
    const std::vector<std::pair<std::string, int64_t>> expected = {
        {"a.parquet", 5}, {"b.parquet", 4}, {"c d.parquet", 3}};
    EXPECT_EQ(files, expected);
    std::vector<std::string> tombstones;
    for (const auto& file : snapshot.tombstones()) tombstones.push_back(file.path);
    EXPECT_EQ(tombstones, (std::vector<std::string>{"y.parquet", "z.parquet"}));
  };
  ASSERT_OK_AND_ASSIGN(auto replayed, Snapshot::Load(store_));
  expect_final(*replayed);
  // The same state from an update, and from a checkpoint plus the commit after it.
  ASSERT_OK_AND_ASSIGN(auto first, Snapshot::Load(store_, {0, {}}));
  ASSERT_OK_AND_ASSIGN(auto updated, first->Update());
  expect_final(*updated);
  ASSERT_OK_AND_ASSIGN(auto second, Snapshot::Load(store_, {1, {}}));
  ASSERT_OK(WriteCheckpoint(*second, 0).status());
  ASSERT_OK_AND_ASSIGN(auto from_checkpoint, Snapshot::Load(store_));
  ASSERT_TRUE(from_checkpoint->log_segment().checkpoint.has_value());
  expect_final(*from_checkpoint);
}

// A table with the v2Checkpoint feature gets UUID-named V2 checkpoints: a
// checkpointMetadata row, its file actions inline or in sidecars, and _last_checkpoint
// naming the file as Spark writes it; the snapshot read back is the same.
TEST_F(SnapshotTest, AV2CheckpointTableGetsV2CheckpointsWithSidecarsWhenLarge) {
  for (const int64_t inline_limit : {100, 2}) {
    SCOPED_TRACE(inline_limit == 2 ? "sidecars" : "inline");
    auto store = std::make_shared<storage::MemoryStore>();
    std::vector<Action> actions = NewTableActions();
    actions[0] = Protocol{3, 7, std::vector<std::string>{"v2Checkpoint"},
                          std::vector<std::string>{"v2Checkpoint"}};
    for (const char* path : {"a.parquet", "b.parquet", "c.parquet", "d.parquet"}) {
      Add add;
      add.path = path;
      add.stats = R"({"numRecords":1})";
      actions.push_back(add);
    }
    Remove removed;
    removed.path = "a.parquet";
    removed.deletion_timestamp = 1;
    for (const auto& commit : {actions, std::vector<Action>{removed}}) {
      ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeCommit(commit));
      const Version version = store->Head(CommitPath(0)).ok() ? 1 : 0;
      ASSERT_OK(store->Put(CommitPath(version), arrow::Buffer::FromString(bytes),
                           storage::PutMode::kCreateIfAbsent));
    }
    ASSERT_OK_AND_ASSIGN(auto replayed, Snapshot::Load(store));
    CheckpointOptions options;
    options.max_inline_file_actions = inline_limit;
    options.file_actions_per_sidecar = 2;
    ASSERT_OK_AND_ASSIGN(auto info, WriteCheckpoint(*replayed, 0, options));
    EXPECT_EQ(info.path.rfind("_delta_log/00000000000000000001.checkpoint.", 0), 0u);
    EXPECT_EQ(info.path.size(), std::string("_delta_log/").size() + 20 + 12 + 36 + 8);
    EXPECT_EQ(info.num_sidecars, inline_limit == 2 ? 2 : 0);  // 3 files + 1 tombstone
    EXPECT_EQ(info.num_actions, 3 + 4 + info.num_sidecars);
    ASSERT_OK_AND_ASSIGN(auto top, ReadParquetActions(*store, info.path));
    int metadata_rows = 0;
    for (const auto& action : top) {
      if (const auto* c = std::get_if<CheckpointMetadata>(&action)) {
        EXPECT_EQ(c->version, 1);
        ++metadata_rows;
      }
      if (inline_limit == 2) EXPECT_FALSE(std::holds_alternative<Add>(action));
    }
    EXPECT_EQ(metadata_rows, 1);
    ASSERT_OK_AND_ASSIGN(auto sidecars, store->List("_delta_log/_sidecars/", ""));
    EXPECT_EQ(sidecars.size(), static_cast<size_t>(info.num_sidecars));
    ASSERT_OK_AND_ASSIGN(auto hint, store->Get(LastCheckpointPath()));
    const auto last = nlohmann::json::parse(hint->ToString());
    EXPECT_EQ(last["version"], 1);
    EXPECT_EQ("_delta_log/" + last["v2Checkpoint"]["path"].get<std::string>(), info.path);
    EXPECT_EQ(last["v2Checkpoint"]["sidecarFiles"].size(),
              static_cast<size_t>(info.num_sidecars));
    for (Version v : {0, 1}) ASSERT_OK(store->Delete(CommitPath(v)));
    ASSERT_OK_AND_ASSIGN(auto loaded, Snapshot::Load(store));
    ASSERT_TRUE(loaded->log_segment().checkpoint.has_value());
    EXPECT_EQ(loaded->files(), replayed->files());
    EXPECT_EQ(loaded->tombstones().size(), 1u);
    EXPECT_EQ(loaded->protocol(), replayed->protocol());
    // Log cleanup past a newer V2 checkpoint takes the older one's sidecars, and only
    // those.
    Remove next;
    next.path = "b.parquet";
    next.deletion_timestamp = 1;
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeCommit({next}));
    ASSERT_OK(store->Put(CommitPath(2), arrow::Buffer::FromString(bytes),
                         storage::PutMode::kCreateIfAbsent));
    ASSERT_OK_AND_ASSIGN(auto third, Snapshot::Load(store));
    ASSERT_OK_AND_ASSIGN(auto newer, WriteCheckpoint(*third, 0, options));
    ASSERT_OK(CleanupExpiredLogs(*store, 0, NowMs() + 60'000).status());
    ASSERT_OK_AND_ASSIGN(auto left, store->List("_delta_log/_sidecars/", ""));
    EXPECT_EQ(left.size(), static_cast<size_t>(newer.num_sidecars));
    EXPECT_FALSE(store->Head(info.path).ok());
    ASSERT_OK_AND_ASSIGN(auto cleaned, Snapshot::Load(store));
    EXPECT_EQ(cleaned->files(), third->files());
  }
}

TEST_F(SnapshotTest, ACheckpointWrittenInSlicesHoldsEveryFileOnce) {
  // More files than one slice of the checkpoint writer and one batch of its reader (64Ki
  // rows each), in one commit.
  std::vector<Action> actions = NewTableActions();
  constexpr int kFiles = 70'000;
  for (int i = 0; i < kFiles; ++i) {
    Add add;
    add.path = "part-" + std::to_string(i) + ".parquet";
    add.size = i;
    add.stats = R"({"numRecords":1})";
    actions.push_back(std::move(add));
  }
  // A tombstone whose key sorts before every file: the checkpoint's rows then arrive in
  // several sorted runs.
  Add gone;
  gone.path = "0-gone.parquet";
  actions.push_back(gone);
  Remove removed;
  removed.path = gone.path;
  for (const auto& commit : {actions, std::vector<Action>{removed}}) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, EncodeCommit(commit));
    const Version version = store_->Head(CommitPath(0)).ok() ? 1 : 0;
    ASSERT_OK(store_->Put(CommitPath(version),
                          arrow::Buffer::FromString(std::move(bytes)),
                          storage::PutMode::kCreateIfAbsent));
  }
  ASSERT_OK_AND_ASSIGN(auto replayed, Snapshot::Load(store_));
  ASSERT_OK(WriteCheckpoint(*replayed, 0).status());
  for (Version v : {0, 1}) ASSERT_OK(store_->Delete(CommitPath(v)));
  ASSERT_OK_AND_ASSIGN(auto loaded, Snapshot::Load(store_));
  ASSERT_TRUE(loaded->log_segment().checkpoint.has_value());
  ASSERT_EQ(loaded->files().size(), static_cast<size_t>(kFiles));
  EXPECT_EQ(loaded->files(), replayed->files());
  EXPECT_EQ(loaded->CountLiveRecords(), std::optional<int64_t>(kFiles));
  ASSERT_EQ(loaded->tombstones().size(), 1u);
  EXPECT_EQ(loaded->tombstones().front().path, "0-gone.parquet");
}

TEST_F(SnapshotTest, UpdateReplaysOnlyNewCommits) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 5)}).status());
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_OK_AND_ASSIGN(auto same, snapshot->Update());
  EXPECT_EQ(same.get(), snapshot.get());
  ASSERT_OK(WriteBatches(store_, {Blocks(5, 7)}).status());
  ASSERT_OK(DeleteRows(store_, "block_num < 2").status());
  ASSERT_OK_AND_ASSIGN(auto updated, snapshot->Update());
  EXPECT_EQ(updated->version(), 2);
  ASSERT_OK_AND_ASSIGN(auto fresh, Snapshot::Load(store_));
  EXPECT_EQ(updated->files(), fresh->files());
}

TEST_F(SnapshotTest, AnUpdateSharesTheListsItsCommitsLeaveAlone) {
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 5), Blocks(5, 10)}).status());
  ASSERT_OK(DeleteRows(store_, "block_num < 5").status());  // a tombstone
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  ASSERT_FALSE(snapshot->tombstones().empty());
  // An append: new files, the same tombstones (a stream's 100,000 are not copied).
  ASSERT_OK(WriteBatches(store_, {Blocks(10, 12)}).status());
  ASSERT_OK_AND_ASSIGN(auto appended, snapshot->Update());
  EXPECT_TRUE(appended->tombstones().SharesListWith(snapshot->tombstones()));
  EXPECT_FALSE(appended->files().SharesListWith(snapshot->files()));
  EXPECT_EQ(appended->files().size(), snapshot->files().size() + 1);
  // A delete changes both; the older snapshots keep what they had.
  ASSERT_OK(DeleteRows(store_, "block_num >= 10").status());
  ASSERT_OK_AND_ASSIGN(auto deleted, appended->Update());
  EXPECT_FALSE(deleted->tombstones().SharesListWith(appended->tombstones()));
  EXPECT_EQ(deleted->tombstones().size(), appended->tombstones().size() + 1);
  EXPECT_EQ(appended->files().size(), snapshot->files().size() + 1);
  ASSERT_OK_AND_ASSIGN(auto fresh, Snapshot::Load(store_));
  EXPECT_EQ(deleted->files(), fresh->files());
  EXPECT_EQ(deleted->tombstones(), fresh->tombstones());
}

TEST_F(SnapshotTest, UpdateOfASnapshotOlderThanTheCleanedUpLogReloads) {
  TableWriteOptions options;
  options.configuration["delta.checkpointInterval"] = "2";
  ASSERT_OK(WriteBatches(store_, {Blocks(0, 5)}, options).status());
  ASSERT_OK_AND_ASSIGN(auto idle, Snapshot::Load(store_));
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_OK(WriteBatches(store_, {Blocks(5 * i, 5 * i + 5)}).status());
  }
  // Log cleanup removed the commits the idle reader would need; a checkpoint covers them.
  ASSERT_OK(store_->Delete("_delta_log/00000000000000000001.json"));
  ASSERT_OK(store_->Delete("_delta_log/00000000000000000002.json"));
  ASSERT_OK_AND_ASSIGN(auto updated, idle->Update());
  EXPECT_EQ(updated->version(), 3);
  EXPECT_EQ(updated->CountLiveRecords(), std::optional<int64_t>(20));
}

TEST_F(SnapshotTest, StaleLastCheckpointIsTolerated) {
  TableWriteOptions options;
  options.configuration["delta.checkpointInterval"] = "2";
  for (int i = 0; i < 5; ++i)
    ASSERT_OK(WriteBatches(store_, {Blocks(i, i + 1)}, options).status());
  ASSERT_OK(store_->Put(LastCheckpointPath(),
                        arrow::Buffer::FromString(R"({"version":2,"size":1})"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto snapshot, Snapshot::Load(store_));
  EXPECT_EQ(snapshot->version(), 4);
  EXPECT_EQ(snapshot->log_segment().checkpoint->version, 4);
  ASSERT_OK(store_->Put(LastCheckpointPath(), arrow::Buffer::FromString("garbage"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK(Snapshot::Load(store_).status());
  // A damaged checkpoint falls back to an older one or to the commits.
  ASSERT_OK(store_->Put(CheckpointPath(4), arrow::Buffer::FromString("not parquet"),
                        storage::PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto recovered, Snapshot::Load(store_));
  EXPECT_EQ(recovered->files().size(), 5u);
}

}  // namespace
}  // namespace ampdelta::delta
