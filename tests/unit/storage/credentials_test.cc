#include "ampdelta/storage/credentials.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace ampdelta::storage {
namespace {

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* key :
         {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AZURE_STORAGE_ACCOUNT_NAME",
          "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
          "GOOGLE_SERVICE_ACCOUNT", "GOOGLE_APPLICATION_CREDENTIALS"}) {
      ::unsetenv(key);
    }
  }
};

TEST_F(CredentialsTest, MissingS3CredentialsGiveTheSeedsWarning) {
  EXPECT_EQ(MissingCredentialsWarning("s3://my-bucket/amp/blocks",
                                      {{"AWS_REGION", "us-east-1"}}),
            "Missing S3 credentials: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']");
}

TEST_F(CredentialsTest, OptionsComeFirstThenEnvironmentVariablesOfTheSameName) {
  ::setenv("AWS_SECRET_ACCESS_KEY", "from-env", 1);
  EXPECT_EQ(MissingCredentials("s3://b/t", {{"AWS_ACCESS_KEY_ID", "AKIA"}}),
            std::vector<std::string>{});
  EXPECT_EQ(
      LookupOption({{"AWS_SECRET_ACCESS_KEY", "from-options"}}, "AWS_SECRET_ACCESS_KEY"),
      std::optional<std::string>("from-options"));
  EXPECT_EQ(MissingCredentials("s3://b/t", {}),
            std::vector<std::string>{"AWS_ACCESS_KEY_ID"});
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
}

TEST_F(CredentialsTest, AzureAcceptsASasTokenInsteadOfTheKeyAndGcsAKeyFile) {
  EXPECT_EQ(MissingCredentialsWarning("abfss://c@acct.dfs.core.windows.net/t", {}),
            "Missing Azure credentials: ['AZURE_STORAGE_ACCOUNT_NAME', "
            "'AZURE_STORAGE_ACCOUNT_KEY']");
  EXPECT_EQ(MissingCredentials("az://c/t", {{"AZURE_STORAGE_ACCOUNT_NAME", "acct"},
                                            {"AZURE_STORAGE_SAS_TOKEN", "sv=…"}}),
            std::vector<std::string>{});
  EXPECT_EQ(MissingCredentialsWarning("gs://bucket/t", {}),
            "Missing GCS credentials: ['GOOGLE_SERVICE_ACCOUNT']");
  EXPECT_EQ(
      MissingCredentials("gcs://bucket/t", {{"GOOGLE_SERVICE_ACCOUNT", "/key.json"}}),
      std::vector<std::string>{});
}

TEST_F(CredentialsTest, LocalTablesNeedNoCredentials) {
  EXPECT_EQ(MissingCredentialsWarning("./data/blocks", {}), "");
  EXPECT_EQ(MissingCredentialsWarning("file:///tmp/blocks", {}), "");
}

}  // namespace
}  // namespace ampdelta::storage
