#include "ampdelta/amp/query_text.h"

#include "tests/support/test_util.h"

namespace ampdelta::amp {
namespace {

TEST(QueryTextTest, AppendsStreamSettingOnce) {
  EXPECT_EQ(EnsureStreamingQuery("SELECT * FROM t;"),
            "SELECT * FROM t SETTINGS stream = true");
  const std::string once = EnsureStreamingQuery("SELECT * FROM t");
  EXPECT_EQ(EnsureStreamingQuery(once), once);
}

TEST(QueryTextTest, RecognisesExistingSettingInAnyCase) {
  EXPECT_TRUE(HasStreamSetting("select * from t settings STREAM=True"));
  EXPECT_TRUE(HasStreamSetting("SELECT * FROM t SETTINGS a = 1, stream = true ;"));
  EXPECT_FALSE(HasStreamSetting("SELECT * FROM t SETTINGS stream = false"));
  EXPECT_FALSE(HasStreamSetting("SELECT 'settings stream = true' FROM t"));
  EXPECT_FALSE(
      HasStreamSetting("SELECT * FROM (SELECT * FROM t SETTINGS stream = true) AS s"));
}

TEST(QueryTextTest, ExtendsAnExistingSettingsClause) {
  EXPECT_EQ(EnsureStreamingQuery("SELECT * FROM t SETTINGS a = 1"),
            "SELECT * FROM t SETTINGS a = 1, stream = true");
}

}  // namespace
}  // namespace ampdelta::amp
