#include "ampdelta/delta/txn/transaction.h"

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/unit/delta/table_test_util.h"

namespace ampdelta::delta {
namespace {

using test_tables::Blocks;
using test_tables::WriteBatches;

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(WriteBatches(store_, {Blocks(0, 10)}).status()); }

  std::shared_ptr<const Snapshot> Latest() { return *Snapshot::Load(store_); }

  Add FileAdd(const std::string& path) {
    Add add;
    add.path = path;
    add.size = 1;
    return add;
  }

  std::shared_ptr<storage::MemoryStore> inner_ = std::make_shared<storage::MemoryStore>();
  std::shared_ptr<storage::FaultStore> store_ =
      std::make_shared<storage::FaultStore>(inner_);
};

TEST_F(TransactionTest, CreatingATableWithoutProtocolIsAnErrorNotACrash) {
  // No read snapshot and no protocol: Commit used to dereference the missing protocol
  // before checking for it.
  auto empty = std::make_shared<storage::MemoryStore>();
  Transaction create(empty, nullptr);
  Metadata metadata;
  metadata.id = "t";
  metadata.schema_string = R"({"type":"struct","fields":[]})";
  create.SetMetadata(metadata);
  create.AddFiles({FileAdd("a.parquet")});
  EXPECT_THAT(create.Commit(),
              testing::StatusHasMessage("needs a protocol and metadata"));
  Transaction bare(empty, nullptr);
  EXPECT_THAT(bare.Commit(), testing::StatusHasMessage("needs a protocol and metadata"));
}

TEST_F(TransactionTest, CommittingAPathThatIsNotUtf8IsAnErrorNotAnException) {
  Transaction txn(store_, Latest());
  txn.AddFiles({FileAdd("bad-\xff.parquet")});
  EXPECT_THAT(txn.Commit(), testing::StatusHasMessage("add.path"));
  EXPECT_EQ(Latest()->version(), 0);
}

TEST_F(TransactionTest, BlindAppendsFromTheSameSnapshotBothCommit) {
  auto read = Latest();
  Transaction first(store_, read);
  first.AddFiles({FileAdd("a.parquet")});
  Transaction second(store_, read);
  second.AddFiles({FileAdd("b.parquet")});
  ASSERT_OK_AND_ASSIGN(auto one, first.Commit());
  ASSERT_OK_AND_ASSIGN(auto two, second.Commit());
  EXPECT_EQ(one.version, 1);
  EXPECT_EQ(two.version, 2);
  EXPECT_EQ(two.attempts, 2);
  EXPECT_EQ(Latest()->files().size(), 3u);
}

TEST_F(TransactionTest, SameAppIdConflicts) {
  auto read = Latest();
  Transaction first(store_, read);
  first.SetAppTransaction({"stream-1", 5, {}});
  first.AddFiles({FileAdd("a.parquet")});
  Transaction second(store_, read);
  second.SetAppTransaction({"stream-1", 5, {}});
  second.AddFiles({FileAdd("b.parquet")});
  ASSERT_OK(first.Commit().status());
  EXPECT_THAT(second.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(Latest()->AppTransactionVersion("stream-1"), std::optional<int64_t>(5));
  EXPECT_EQ(Latest()->files().size(), 2u);
}

// Two backfill partitions naming different ranges that overlap: the later commit sees
// the winner's claim (or the read snapshot's) and conflicts instead of adding its rows.
TEST_F(TransactionTest, AClaimOverlappingAWinnersOrTheSnapshotsRecordConflicts) {
  auto overlaps = [](const std::string& app_id) { return app_id == "fill/10-19"; };
  auto read = Latest();
  Transaction winner(store_, read);
  winner.SetAppTransaction({"fill/10-19", 19, {}});
  winner.AddFiles({FileAdd("a.parquet")});
  Transaction loser(store_, read);
  loser.SetAppTransaction({"fill/15-24", 24, {}});
  loser.ConflictWithAppIds(overlaps);
  loser.AddFiles({FileAdd("b.parquet")});
  ASSERT_OK(winner.Commit().status());
  EXPECT_THAT(loser.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  // Planned on the table as it is now, the claim is in the read snapshot.
  Transaction late(store_, Latest());
  late.ConflictWithAppIds(overlaps);
  late.AddFiles({FileAdd("c.parquet")});
  EXPECT_THAT(late.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  // A claim nothing overlaps commits.
  Transaction other(store_, Latest());
  other.ConflictWithAppIds([](const std::string& app_id) { return app_id == "fill/30"; });
  other.AddFiles({FileAdd("d.parquet")});
  ASSERT_OK(other.Commit().status());
  EXPECT_EQ(Latest()->files().size(), 3u);
}

// A record the caller found stale (its rows were restored away) claims nothing in the
// read snapshot, so the blocks can load again; a concurrent commit recording it anew
// still wins the claim.
TEST_F(TransactionTest, ASupersededRecordOfTheSnapshotClaimsNothingButAWinnersDoes) {
  auto overlaps = [](const std::string& app_id) { return app_id == "fill/10-19"; };
  Transaction first(store_, Latest());
  first.SetAppTransaction({"fill/10-19", 19, {}});
  first.AddFiles({FileAdd("a.parquet")});
  ASSERT_OK(first.Commit().status());
  auto read = Latest();
  Transaction reload(store_, read);
  reload.SetAppTransaction({"fill/10-19", 10, {}});
  reload.ConflictWithAppIds(overlaps);
  reload.SupersedeAppIds({"fill/10-19"});
  reload.AddFiles({FileAdd("b.parquet")});
  ASSERT_OK(reload.Commit().status());
  // Another reload planned on the same snapshot loses to the first.
  Transaction twin(store_, read);
  twin.SetAppTransaction({"fill/10-19", 10, {}});
  twin.ConflictWithAppIds(overlaps);
  twin.SupersedeAppIds({"fill/10-19"});
  twin.AddFiles({FileAdd("c.parquet")});
  EXPECT_THAT(twin.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  // Without superseding it, the snapshot's record is a claim.
  Transaction plain(store_, read);
  plain.ConflictWithAppIds(overlaps);
  plain.AddFiles({FileAdd("d.parquet")});
  EXPECT_THAT(plain.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(Latest()->files().size(), 3u);
}

// A stop during the back-off after a lost race ends the commit, once the winners show
// none of its attempts landed: nothing is committed, and the caller knows it.
TEST_F(TransactionTest, AStopDuringTheBackOffAfterALostRaceCommitsNothing) {
  std::atomic<bool> stop{false};
  auto read = Latest();
  storage::FaultRule race;
  race.op = storage::StoreOp::kPut;
  race.path_contains = "00000000000000000001.json";
  race.fail = false;
  race.before = [&] {
    Transaction winner(inner_, read);
    winner.AddFiles({FileAdd("winner.parquet")});
    ASSERT_OK(winner.Commit().status());
    stop = true;  // Ctrl-C while this commit lost the race
  };
  store_->AddRule(race);
  CommitOptions options;
  options.stop = &stop;
  int sleeps = 0;
  options.sleep = [&sleeps](std::chrono::milliseconds) { ++sleeps; };
  Transaction loser(store_, read, options);
  loser.AddFiles({FileAdd("loser.parquet")});
  auto committed = loser.Commit();
  ASSERT_FALSE(committed.ok());
  EXPECT_TRUE(committed.status().IsCancelled()) << committed.status().ToString();
  EXPECT_THAT(committed, testing::StatusHasMessage("nothing committed"));
  EXPECT_LE(sleeps, 1);
  EXPECT_EQ(Latest()->version(), 1);
  EXPECT_EQ(Latest()->files().size(), 2u);  // the first file and the winner's
}

// A watched file removed by another writer of the same application (its reorg undo) is
// that writer's progress: reported as a concurrent loader, never as a rollback to resume
// from (which would adopt the other loader's progress).
TEST_F(TransactionTest, WatchedRemovalByTheSameAppIsAConcurrentAppNotARollback) {
  auto read = Latest();
  const std::string watched = read->FileKey(read->files().front().path);
  Transaction other(store_, read);
  other.SetAppTransaction({"stream-1", 6, {}});
  other.RemoveFiles({RemoveFor(read->files().front())});
  ASSERT_OK(other.Commit().status());
  Transaction ours(store_, read);
  ours.SetAppTransaction({"stream-1", 6, {}});
  ours.WatchRemovals({watched});
  ours.AddFiles({FileAdd("b.parquet")});
  auto committed = ours.Commit();
  ASSERT_THAT(committed, testing::HasErrorCode(ErrorCode::kCommitConflict));
  const ErrorDetail* detail = GetErrorDetail(committed.status());
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->subcode(), kConcurrentApp);
}

// A data-change add of a file carrying the watched tag (a restore giving back a stream's
// earlier progress) is a rollback: the table's record of the stream moved.
TEST_F(TransactionTest, ConcurrentAddOfAFileWithTheWatchedTagIsARollback) {
  auto read = Latest();
  Transaction restore(store_, read);
  Add given_back = FileAdd("old.parquet");
  given_back.tags = NullableStringMap{{"ranges.stream-1", std::string("[]")}};
  restore.AddFiles({given_back});
  ASSERT_OK(restore.Commit().status());
  Transaction ours(store_, read);
  ours.SetAppTransaction({"stream-1", 2, {}});
  ours.WatchRemovals({}, {"ranges.stream-1"});
  ours.AddFiles({FileAdd("b.parquet")});
  auto committed = ours.Commit();
  ASSERT_THAT(committed, testing::HasErrorCode(ErrorCode::kCommitConflict));
  const ErrorDetail* detail = GetErrorDetail(committed.status());
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->subcode(), kRolledBack);
}

// The read snapshot's files with the watched tag are watched by key too: another engine's
// remove may carry no tags.
TEST_F(TransactionTest, UntaggedRemoveOfAWatchedTagsFileIsARollback) {
  Transaction tag(store_, Latest());
  Add tagged = FileAdd("tagged.parquet");
  tagged.tags = NullableStringMap{{"ranges.stream-1", std::string("[]")}};
  tag.AddFiles({tagged});
  ASSERT_OK(tag.Commit().status());
  auto read = Latest();
  Transaction other(store_, read);
  Remove untagged = RemoveFor(tagged);
  untagged.tags.reset();
  other.RemoveFiles({untagged});
  ASSERT_OK(other.Commit().status());
  Transaction ours(store_, read);
  ours.WatchRemovals({}, {"ranges.stream-1"});
  ours.AddFiles({FileAdd("b.parquet")});
  auto committed = ours.Commit();
  ASSERT_THAT(committed, testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(GetErrorDetail(committed.status())->subcode(), kRolledBack);
}

TEST_F(TransactionTest, SerializableTransactionsConflictWithConcurrentBlindAppends) {
  auto read = Latest();
  Transaction append(store_, read);
  append.AddFiles({FileAdd("a.parquet")});
  Transaction merge(store_, read);
  merge.ConflictWithConcurrentAppends();
  merge.AddFiles({FileAdd("b.parquet")});
  ASSERT_OK(append.Commit().status());
  EXPECT_THAT(merge.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ(Latest()->version(), 1);
}

TEST_F(TransactionTest, ReTaggingAFileThatACompactionRemovedConflicts) {
  auto read = Latest();
  Add retagged = read->files().front();
  retagged.data_change = false;
  retagged.tags = NullableStringMap{{"k", "v"}};
  Transaction compaction(store_, read);
  compaction.SetDataChange(false);
  compaction.RemoveFiles({RemoveFor(read->files().front(), /*data_change=*/false)});
  compaction.AddFiles({FileAdd("compacted.parquet")});
  Transaction retag(store_, read);
  retag.AddFiles({retagged});
  ASSERT_OK(compaction.Commit().status());
  EXPECT_THAT(retag.Commit(), testing::HasErrorCode(ErrorCode::kCommitConflict));
}

TEST_F(TransactionTest, ASerializableCreateThatLostTheRaceConflictsInsteadOfAppending) {
  auto fresh = std::make_shared<storage::MemoryStore>();
  auto create = [&](bool serializable) {
    Transaction txn(fresh, nullptr);
    auto table = *Snapshot::Load(store_);
    txn.SetProtocol(table->protocol());
    txn.SetMetadata(table->metadata());
    txn.AddFiles({FileAdd(serializable ? "merge.parquet" : "first.parquet")});
    if (serializable) txn.ConflictWithConcurrentAppends();
    return txn.Commit();
  };
  ASSERT_OK(create(false).status());
  EXPECT_THAT(create(true), testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_EQ((*Snapshot::Load(fresh))->version(), 0);
}

TEST_F(TransactionTest, ACreateWhoseOwnWriteLandedLateIsCommittedOnceNotAConflict) {
  // Version 0 lands, its reply is lost and the read-back misses it; the retry finds the
  // version taken by our own first attempt: the create is done, under its app id too.
  auto fresh = std::make_shared<storage::MemoryStore>();
  auto faulty = std::make_shared<storage::FaultStore>(fresh);
  storage::FaultRule lost;
  lost.op = storage::StoreOp::kPut;
  lost.path_contains = "_delta_log/00000000000000000000.json";
  lost.lose_reply = true;
  faulty->AddRule(lost);
  storage::FaultRule missed;
  missed.op = storage::StoreOp::kGet;
  missed.path_contains = "_delta_log/00000000000000000000.json";
  missed.not_found = true;
  faulty->AddRule(missed);
  Transaction create(faulty, nullptr);
  auto table = Latest();
  create.SetProtocol(table->protocol());
  create.SetMetadata(table->metadata());
  create.AddFiles({FileAdd("first.parquet")});
  create.SetAppTransaction(SetTransaction{"app", 1, {}});
  ASSERT_OK_AND_ASSIGN(auto result, create.Commit());
  EXPECT_EQ(result.version, 0);
  ASSERT_OK_AND_ASSIGN(auto created, Snapshot::Load(fresh));
  EXPECT_EQ(created->version(), 0);
  EXPECT_EQ(created->files().size(), 1u);
}

TEST_F(TransactionTest, OurOwnLateWriteIsRecognisedAndNotCommittedTwice) {
  // The write lands but its reply is lost, and the read-back misses it (still in flight):
  // the retry then finds the version taken — by our own commit, which must not repeat.
  storage::FaultRule lost;
  lost.op = storage::StoreOp::kPut;
  lost.path_contains = "_delta_log/00000000000000000001.json";
  lost.lose_reply = true;
  store_->AddRule(lost);
  storage::FaultRule missed;
  missed.op = storage::StoreOp::kGet;
  missed.path_contains = "_delta_log/00000000000000000001.json";
  missed.not_found = true;
  store_->AddRule(missed);
  Transaction append(store_, Latest());
  append.AddFiles({FileAdd("a.parquet")});
  ASSERT_OK_AND_ASSIGN(auto committed, append.Commit());
  EXPECT_EQ(committed.version, 1);
  EXPECT_EQ(Latest()->version(), 1);
  EXPECT_EQ(Latest()->files().size(), 2u);
}

TEST_F(TransactionTest, RemovingTheSameFileTwiceConflicts) {
  auto read = Latest();
  Remove remove;
  remove.path = read->files().front().path;
  Transaction first(store_, read);
  first.RemoveFiles({remove});
  Transaction second(store_, read);
  second.RemoveFiles({remove});
  ASSERT_OK(first.Commit().status());
  EXPECT_THAT(second.Commit(), testing::StatusHasMessage("also removes"));
}

TEST_F(TransactionTest, MetadataChangeConflictsWithEverything) {
  auto read = Latest();
  Transaction change(store_, read);
  Metadata metadata = read->metadata();
  metadata.configuration["delta.appendOnly"] = "false";
  change.SetMetadata(metadata);
  Transaction append(store_, read);
  append.AddFiles({FileAdd("c.parquet")});
  ASSERT_OK(change.Commit().status());
  EXPECT_THAT(append.Commit(), testing::StatusHasMessage("metadata"));
}

TEST_F(TransactionTest, LostReplyAfterASuccessfulWriteIsNotADuplicate) {
  store_->AddRule({storage::StoreOp::kPut,
                   "_delta_log/00000000000000000001.json",
                   1,
                   true,
                   "reply lost",
                   {},
                   true,
                   false});
  Transaction txn(store_, Latest());
  txn.AddFiles({FileAdd("d.parquet")});
  ASSERT_OK_AND_ASSIGN(auto result, txn.Commit());
  EXPECT_EQ(result.version, 1);
  EXPECT_EQ(store_->faults_fired(), 1);
  EXPECT_THAT(store_->Head(CommitPath(2)), testing::HasErrorCode(ErrorCode::kNotFound));
  EXPECT_EQ(Latest()->files().size(), 2u);
}

TEST_F(TransactionTest, AWriterCommittingDuringEveryBackOffDoesNotStarveTheCommit) {
  // A stream commits more often than this writer backs off: each back-off ends with a
  // new winner. The free version must be looked up after the back-off, not before it.
  auto read = Latest();
  int competitor = 0;
  CommitOptions options;
  options.sleep = [&](std::chrono::milliseconds) {
    Transaction other(store_, Latest());
    other.AddFiles({FileAdd("other-" + std::to_string(++competitor) + ".parquet")});
    ASSERT_OK(other.Commit().status());
  };
  Transaction before(store_, read);
  before.AddFiles({FileAdd("before.parquet")});
  ASSERT_OK(before.Commit().status());
  Transaction txn(store_, read, options);
  txn.AddFiles({FileAdd("ours.parquet")});
  ASSERT_OK_AND_ASSIGN(auto result, txn.Commit());
  EXPECT_EQ(result.attempts, 2);
  EXPECT_EQ(competitor, 1);
}

TEST_F(TransactionTest, FailedWriteIsRetriedWithoutDuplicates) {
  store_->AddRule({storage::StoreOp::kPut,
                   "_delta_log/00000000000000000001.json",
                   1,
                   false,
                   "503",
                   {},
                   true,
                   false});
  Transaction txn(store_, Latest());
  txn.AddFiles({FileAdd("e.parquet")});
  ASSERT_OK_AND_ASSIGN(auto result, txn.Commit());
  EXPECT_EQ(result.version, 1);
  EXPECT_EQ(result.attempts, 2);
}

TEST_F(TransactionTest, OverwriteRebasesOverConcurrentAppends) {
  auto read = Latest();
  Transaction append(store_, read);
  append.AddFiles({FileAdd("late.parquet")});
  Transaction overwrite(store_, read);
  overwrite.ReplaceWholeTable();
  std::vector<Remove> removes;
  for (const auto& file : read->files()) {
    Remove remove;
    remove.path = file.path;
    removes.push_back(remove);
  }
  overwrite.RemoveFiles(removes);
  overwrite.AddFiles({FileAdd("new.parquet")});
  ASSERT_OK(append.Commit().status());
  ASSERT_OK(overwrite.Commit().status());
  ASSERT_EQ(Latest()->files().size(), 1u);
  EXPECT_EQ(Latest()->files().front().path, "new.parquet");
}

TEST_F(TransactionTest, TablesWithUnknownWriterFeaturesAreRefused) {
  auto read = Latest();
  Transaction upgrade(store_, read);
  upgrade.SetProtocol(Protocol{1, 7, std::nullopt,
                               std::vector<std::string>{"variantType", "appendOnly"}});
  EXPECT_THAT(upgrade.Commit(), testing::StatusHasMessage("variantType"));
}

}  // namespace
}  // namespace ampdelta::delta
