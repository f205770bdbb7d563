#include "ampdelta/delta/txn/conflict_checker.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

Action AddOf(const std::string& path, bool data_change = true,
             std::optional<NullableStringMap> tags = std::nullopt) {
  Add add;
  add.path = path;
  add.data_change = data_change;
  add.tags = std::move(tags);
  return add;
}

Action RemoveOf(const std::string& path, bool data_change = true,
                std::optional<NullableStringMap> tags = std::nullopt) {
  Remove remove;
  remove.path = path;
  remove.data_change = data_change;
  remove.tags = std::move(tags);
  return remove;
}

Action Info(bool blind) {
  CommitInfo info;
  info.operation = "WRITE";
  info.is_blind_append = blind;
  return info;
}

enum class Expect { kOk, kConflict, kConcurrentApp, kRolledBack };

struct Case {
  const char* name;
  std::vector<Action> winner;
  Expect expect;
  ReadSet read;
  WriteSet write;
  Watch watch;
  IsolationLevel isolation;
};

Case Row(const char* name, std::vector<Action> winner, Expect expect = Expect::kOk,
         ReadSet read = {}, WriteSet write = {}, Watch watch = {},
         IsolationLevel isolation = IsolationLevel::kWriteSerializable) {
  return Case{name,
              std::move(winner),
              expect,
              std::move(read),
              std::move(write),
              std::move(watch),
              isolation};
}

// Winning actions against our read and write sets: the expected outcome, row by row.
TEST(ConflictCheckerTest, EachWinningActionAgainstOurReadAndWriteSets) {
  const std::string kTag = "ranges";
  WriteSet app;
  app.app_id = "stream";
  WriteSet removes_a;
  removes_a.removes = {"a"};
  WriteSet readds_a;
  readds_a.readds = {"a"};
  readds_a.adds = {"a"};
  ReadSet reads_a;
  reads_a.files = {"a"};
  ReadSet whole;
  whole.whole_table = true;
  Watch watch_a;
  watch_a.keys = {"a"};
  Watch watch_tag;
  watch_tag.tag_keys = {kTag};
  WriteSet domain_d;
  domain_d.domains = {"d"};
  const auto kWS = IsolationLevel::kWriteSerializable;
  const auto kS = IsolationLevel::kSerializable;
  const NullableStringMap tagged{{kTag, "[]"}};
  const std::vector<Case> cases = {
      Row("a blind append against a blind append", {Info(true), AddOf("x")}),
      Row("a protocol change", {Protocol{}}, Expect::kConflict),
      Row("a metadata change", {Metadata{}}, Expect::kConflict),
      Row("a txn of our application", {SetTransaction{"stream", 3, {}}},
          Expect::kConcurrentApp, {}, app),
      Row("a txn of another application", {SetTransaction{"other", 3, {}}}, Expect::kOk,
          {}, app),
      Row("a domain we also set", {DomainMetadata{"d", "{}", false}}, Expect::kConflict,
          {}, domain_d),
      Row("a remove of a file we remove", {RemoveOf("a")}, Expect::kConflict, {},
          removes_a),
      Row("a compaction removing a file we re-add", {RemoveOf("a", false)},
          Expect::kConflict, {}, readds_a),
      Row("a remove of a file we read", {RemoveOf("a")}, Expect::kConflict, reads_a),
      Row("a compaction of a file we read", {RemoveOf("a", false)}, Expect::kOk, reads_a),
      Row("a remove when we read the whole table", {RemoveOf("z")}, Expect::kConflict,
          whole),
      Row("a blind append when we read the whole table", {Info(true), AddOf("x")},
          Expect::kOk, whole),
      Row("a non-blind data change when we read the whole table",
          {Info(false), AddOf("x")}, Expect::kConflict, whole),
      Row("a blind append under serializable isolation", {Info(true), AddOf("x")},
          Expect::kConflict, {}, {}, {}, kS),
      Row("a compaction's add under serializable isolation",
          {Info(false), AddOf("x", false)}, Expect::kOk, {}, {}, {}, kS),
      Row("a remove of a watched file", {RemoveOf("a")}, Expect::kRolledBack, {}, {},
          watch_a),
      Row("a compaction of a watched file", {RemoveOf("a", false)}, Expect::kOk, {}, {},
          watch_a),
      Row("a remove carrying the watched tag", {RemoveOf("q", true, tagged)},
          Expect::kRolledBack, {}, {}, watch_tag),
      Row("an add carrying the watched tag (a restore)", {AddOf("q", true, tagged)},
          Expect::kRolledBack, {}, {}, watch_tag),
      Row("our own application's commit is never a rollback",
          {SetTransaction{"stream", 4, {}}, RemoveOf("a")}, Expect::kConcurrentApp, {},
          app, watch_a, kWS),
  };
  for (const auto& c : cases) {
    auto outcome = CheckWinner(c.winner, 7, c.isolation, c.read, c.write, c.watch);
    switch (c.expect) {
      case Expect::kOk:
        EXPECT_TRUE(outcome.ok()) << c.name << ": " << outcome.status().ToString();
        break;
      case Expect::kConflict:
        EXPECT_THAT(outcome, testing::HasErrorCode(ErrorCode::kCommitConflict)) << c.name;
        break;
      case Expect::kConcurrentApp:
      case Expect::kRolledBack: {
        const ErrorDetail* detail = GetErrorDetail(outcome.status());
        ASSERT_NE(detail, nullptr) << c.name << ": " << outcome.status().ToString();
        EXPECT_EQ(detail->subcode(),
                  c.expect == Expect::kConcurrentApp ? kConcurrentApp : kRolledBack)
            << c.name;
        break;
      }
    }
  }
}

TEST(ConflictCheckerTest, AWholeTableReplacementRebasesOverWhatOthersDid) {
  WriteSet write;
  write.replace_whole_table = true;
  write.removes = {"a", "b"};
  write.adds = {"new"};
  ReadSet read;
  read.files = {"kept"};
  ASSERT_OK_AND_ASSIGN(
      auto rebase, CheckWinner({Info(true), RemoveOf("a"), AddOf("x"), AddOf("new")}, 3,
                               IsolationLevel::kWriteSerializable, read, write, {}));
  EXPECT_EQ(rebase.superseded, (std::set<std::string>{"a"}));
  ASSERT_EQ(rebase.winner_adds.size(), 1u);  // never our own file
  EXPECT_EQ(rebase.winner_adds[0].path, "x");
  // A file it keeps, rewritten by a compaction meanwhile: the rows would be lost.
  EXPECT_THAT(CheckWinner({RemoveOf("kept", false), AddOf("c", false)}, 3,
                          IsolationLevel::kWriteSerializable, read, write, {}),
              testing::HasErrorCode(ErrorCode::kCommitConflict));
  EXPECT_STREQ(IsolationLevelName(IsolationLevel::kSerializable), "Serializable");
}

}  // namespace
}  // namespace ampdelta::delta
