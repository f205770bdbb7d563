#include "ampdelta/util/redact.h"

#include <gtest/gtest.h>

namespace ampdelta {
namespace {

TEST(RedactTest, UserAndPasswordBecomeStars) {
  EXPECT_EQ(RedactUrl("grpc://alice:hunter2@127.0.0.1:1602"),
            "grpc://***@127.0.0.1:1602");
  EXPECT_EQ(RedactUrl("s3://AKID:SECRET@bucket/path/t"), "s3://***@bucket/path/t");
  EXPECT_EQ(RedactUrl("gs://token@bucket/t"), "gs://***@bucket/t");
}

TEST(RedactTest, UrlsWithoutUserInfoAreUnchanged) {
  for (const char* url : {"grpc://localhost:1602", "s3://bucket/a@b/c", "./data/blocks",
                          "/tmp/a@b", "file:///tmp/x", "not a url", ""}) {
    EXPECT_EQ(RedactUrl(url), url) << url;
    EXPECT_FALSE(UrlHasUserInfo(url)) << url;
  }
}

TEST(RedactTest, OnlyTheAuthorityCounts) {
  // An '@' after the first '/', '?' or '#' is part of the path, query or fragment.
  EXPECT_EQ(RedactUrl("grpc://host:1602/x@y"), "grpc://host:1602/x@y");
  EXPECT_EQ(RedactUrl("grpc://host?u=a@b"), "grpc://host?u=a@b");
  EXPECT_EQ(RedactUrl("grpc://a@b@host"), "grpc://***@host");
}

TEST(RedactTest, AMistypedUrlWithoutASchemeLosesItsUserInfoToo) {
  EXPECT_EQ(RedactUrl("alice:hunter2@127.0.0.1:1602"), "***@127.0.0.1:1602");
  EXPECT_EQ(RedactUrl("alice:hunter2@host/path@x"), "***@host/path@x");
  EXPECT_TRUE(UrlHasUserInfo("alice:hunter2@127.0.0.1:1602"));
}

TEST(RedactTest, AdlsContainerIsNoSecretButAPasswordIs) {
  EXPECT_EQ(RedactUrl("abfss://container@account.dfs.core.windows.net/t"),
            "abfss://container@account.dfs.core.windows.net/t");
  EXPECT_FALSE(UrlHasUserInfo("abfss://container@account.dfs.core.windows.net/t"));
  EXPECT_EQ(RedactUrl("abfss://container:key@account.dfs.core.windows.net/t"),
            "abfss://***@account.dfs.core.windows.net/t");
}

TEST(RedactTest, MessagesLoseTheUrlAndTheBareUserInfo) {
  const std::string url = "grpc://alice:hunter2@127.0.0.1:99999";
  EXPECT_EQ(RedactUrlIn("Invalid port number '99999' in URI '" + url + "'", url),
            "Invalid port number '99999' in URI 'grpc://***@127.0.0.1:99999'");
  EXPECT_EQ(RedactUrlIn("user alice:hunter2 refused", url), "user *** refused");
  EXPECT_EQ(RedactUrlIn("nothing to hide", "grpc://host:1"), "nothing to hide");
}

}  // namespace
}  // namespace ampdelta
