#include "ampdelta/util/logging.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ampdelta::log {
namespace {

TEST(LoggingTest, AnEventIsOneLineOfKeyValuesWithAwkwardValuesQuoted) {
  const Fields fields = {{"version", int64_t{12}},
                         {"error", "disk \"full\"\nagain"},
                         {"empty", ""},
                         {"path", "a=b"},
                         {"forged", "x\r[ampdelta error] \x1b[2J"}};
  EXPECT_EQ(FormatText(Record{Level::kInfo, "commit", fields, {}}),
            R"(commit version=12 error="disk \"full\"\nagain" empty="" path="a=b" )"
            R"(forged="x\r[ampdelta error] \x1b[2J")");
  const Fields none;
  EXPECT_EQ(FormatText(Record{Level::kWarn, "message", none, "free text"}), "free text");
}

TEST(LoggingTest, AJsonRecordHasTimeLevelEventAndTypedFields) {
  const Fields fields = {{"version", int64_t{12}},
                         {"rows", -3},
                         {"stream", true},
                         {"hash", "0x00ff"},
                         {"padded", "007"},
                         {"huge", "123456789012345678901234"},
                         {"bad", std::string("\xff\xfe", 2)},
                         {"table", "123"},  // text that looks like a number stays text
                         {"rate", 34.56, 1},
                         Field::Inferred("commits", "41"),
                         Field::Inferred("head", "mainnet:24000099"),
                         Field::Inferred("big", "99999999999999999999")};
  const std::string line =
      FormatJson(Record{Level::kInfo, "commit", fields, {}}, 1765584000123);
  const auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["time"], "2025-12-13T00:00:00.123Z");
  EXPECT_EQ(parsed["level"], "info");
  EXPECT_EQ(parsed["event"], "commit");
  EXPECT_EQ(parsed["fields"]["version"], 12);
  EXPECT_EQ(parsed["fields"]["rows"], -3);
  EXPECT_EQ(parsed["fields"]["stream"], true);
  EXPECT_EQ(parsed["fields"]["hash"], "0x00ff");
  EXPECT_EQ(parsed["fields"]["padded"], "007");
  EXPECT_EQ(parsed["fields"]["huge"], "123456789012345678901234");
  EXPECT_TRUE(parsed["fields"]["bad"].is_string());  // replaced, never an exception
  EXPECT_EQ(parsed["fields"]["table"], "123");
  EXPECT_DOUBLE_EQ(parsed["fields"]["rate"].get<double>(), 34.6);
  EXPECT_EQ(parsed["fields"]["commits"], 41);
  EXPECT_EQ(parsed["fields"]["head"], "mainnet:24000099");
  EXPECT_EQ(parsed["fields"]["big"], "99999999999999999999");  // beyond int64: text
  EXPECT_EQ(line.find('\n'), std::string::npos);
  // The keys come in this order, for people reading the lines.
  EXPECT_EQ(line.rfind(R"({"time":)", 0), 0u);
  const Fields none;
  const auto message =
      nlohmann::json::parse(FormatJson(Record{Level::kWarn, "message", none, "x"}, 0));
  EXPECT_EQ(message["time"], "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(message["fields"]["message"], "x");
}

TEST(LoggingTest, EventsBelowTheLevelReachNoSink) {
  std::vector<std::string> seen;
  SetSink([&](const Record& record) { seen.emplace_back(record.event); });
  const Level before = GetLevel();
  SetLevel(Level::kWarn);
  Event(Level::kInfo, "commit", {});
  Event(Level::kWarn, "retry", {{"attempt", "1"}});
  Write(Level::kError, "bad");
  SetLevel(before);
  SetSink(nullptr);
  EXPECT_EQ(seen, (std::vector<std::string>{"retry", "message"}));
}

}  // namespace
}  // namespace ampdelta::log
