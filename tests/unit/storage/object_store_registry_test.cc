#include "ampdelta/storage/object_store_registry.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <arrow/buffer.h>

#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/location.h"
#include "ampdelta/util/status.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta::storage {
namespace {

TEST(ObjectStoreRegistryTest, PlainPathsAndFileUrisOpenLocalStores) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto by_path, OpenObjectStore(dir.path() + "/t"));
  ASSERT_OK(by_path->Put("x", arrow::Buffer::FromString("1"), PutMode::kOverwrite));
  for (const std::string& uri :
       {"file://" + dir.path() + "/t", "file:" + dir.path() + "/t",
        "file://localhost" + dir.path() + "/t"}) {
    ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore(uri));
    EXPECT_TRUE(store->Head("x").ok()) << uri;
    EXPECT_EQ(store->root_uri(), "file://" + dir.path() + "/t");
  }
}

TEST(ObjectStoreRegistryTest, APathWithANulIsRefusedAndNothingIsCreated) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/a" + std::string(1, '\0') + "b";
  EXPECT_THAT(OpenObjectStore(path), testing::StatusHasMessage("contains a NUL byte"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/a"));
  // Percent-encoded in a file:// URL, the same NUL.
  EXPECT_THAT(OpenObjectStore("file://" + dir.path() + "/n1/n2%00zz/t"),
              testing::StatusHasMessage("NUL byte"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/n1"));
}

TEST(ObjectStoreRegistryTest, AnEmptyNewTableFolderIsRemovedWithTheParentsMadeForIt) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore(dir.path() + "/new/deep/t"));
  ASSERT_OK(store->Put("_ampdelta_leases/l.json", arrow::Buffer::FromString("{}"),
                       PutMode::kCreateIfAbsent));
  ASSERT_OK(store->Delete("_ampdelta_leases/l.json"));
  store->RemoveFolderIfEmpty("_ampdelta_leases");
  store->RemoveFolderIfEmpty("");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/new"));
  EXPECT_TRUE(std::filesystem::exists(dir.path()));
  // A folder that holds something stays, and so do the parents above it.
  ASSERT_OK(store->Put("_delta_log/0.json", arrow::Buffer::FromString("{}"),
                       PutMode::kCreateIfAbsent));
  store->RemoveFolderIfEmpty("");
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/new/deep/t/_delta_log/0.json"));
  // A folder that was there before the store opened it is the user's, empty or not.
  std::filesystem::create_directories(dir.path() + "/mine");
  ASSERT_OK_AND_ASSIGN(auto existing, OpenObjectStore(dir.path() + "/mine"));
  existing->RemoveFolderIfEmpty("");
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/mine"));
}

TEST(ObjectStoreRegistryTest, MemoryStoresAreSharedByName) {
  ASSERT_OK_AND_ASSIGN(auto a, OpenObjectStore("memory://shared-test"));
  ASSERT_OK(a->Put("k", arrow::Buffer::FromString("v"), PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto b, OpenObjectStore("memory://shared-test"));
  EXPECT_OK(b->Head("k").status());
}

TEST(ObjectStoreRegistryTest, SchemesAreRecognised) {
  EXPECT_EQ(UriScheme("S3://bucket/p"), "s3");
  EXPECT_EQ(UriScheme("abfss://c@a.dfs.core.windows.net/p"), "abfss");
  EXPECT_EQ(UriScheme("./data/blocks"), "");
  EXPECT_EQ(UriScheme("/abs/x"), "");
  EXPECT_EQ(UriScheme("file:/abs/x"), "file");
  EXPECT_THAT(OpenObjectStore("ftp://host/x"), testing::StatusHasMessage("unsupported"));
}

TEST(ObjectStoreRegistryTest, AFileUriIsCanonicallyTheAbsolutePathItNames) {
  EXPECT_EQ(CanonicalLocation("file:/some/with%20space/p@#h"), "/some/with space/p@#h");
  EXPECT_EQ(CanonicalLocation("file:///some/path"), "/some/path");
  EXPECT_EQ(CanonicalLocation("/some/path"), "/some/path");
  EXPECT_EQ(CanonicalLocation("s3://bucket/k%20x"), "s3://bucket/k%20x");
}

TEST(ObjectStoreRegistryTest, LocalKeysCannotEscapeTheRoot) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, LocalStore::Make(dir.path()));
  EXPECT_THAT(
      store->Put("../escape", arrow::Buffer::FromString("x"), PutMode::kOverwrite),
      testing::StatusHasMessage("escapes the root"));
}

TEST(ObjectStoreRegistryTest, LocalStoresNameTheirKeysHoweverAPathIsSpelled) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore(dir.path() + "/t"));
  EXPECT_TRUE(store->is_file_system());
  const std::string root = dir.path() + "/t";
  for (const std::string& location : std::vector<std::string>{
           "file://" + root + "/p=1/a%20b.parquet", "file:" + root + "/p=1/a%20b.parquet",
           "file://localhost" + root + "/p=1/a%20b.parquet", root + "/p=1/a%20b.parquet",
           "file:" + root + "/p=1/a b.parquet",
           "file://" + root + "/q/../p=1/a b.parquet"}) {
    EXPECT_EQ(store->KeyOf(location), std::optional<std::string>("p=1/a b.parquet"))
        << location;
  }
  for (const std::string& outside : std::vector<std::string>{
           "file:///elsewhere/x.parquet", "file://" + root + "/../x.parquet",
           "file://other-host" + root + "/x.parquet", "file://" + root,
           "relative/x.parquet", "s3://bucket" + root + "/x.parquet"}) {
    EXPECT_EQ(store->KeyOf(outside), std::nullopt) << outside;
  }
}

TEST(ObjectStoreRegistryTest, OtherStoresNameOnlyNormalKeysUnderTheirRoot) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore("memory://key-of-test"));
  EXPECT_FALSE(store->is_file_system());
  EXPECT_EQ(store->KeyOf("memory://key-of-test/p=1/a%20b.parquet"),
            std::optional<std::string>("p=1/a b.parquet"));
  for (const char* refused :
       {"memory://key-of-test", "memory://key-of-test/", "memory://key-of-test/../x",
        "memory://key-of-test/./x", "memory://key-of-testx/y", "memory://other/x",
        "/key-of-test/x"}) {
    EXPECT_EQ(store->KeyOf(refused), std::nullopt) << refused;
  }
}

TEST(ObjectStoreRegistryTest, ALocalFileWhereAFolderOfKeysShouldBeFailsTheListing) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, OpenObjectStore(dir.path() + "/t"));
  ASSERT_OK(store->Put("folder", arrow::Buffer::FromString("x"), PutMode::kOverwrite));
  auto listed = store->List("folder/");
  ASSERT_FALSE(listed.ok());
  const ErrorDetail* detail = GetErrorDetail(listed.status());
  ASSERT_NE(detail, nullptr);
  EXPECT_EQ(detail->subcode(), "ENOTDIR");
  EXPECT_THAT(listed.status(), testing::StatusHasMessage("is a file, not a folder"));
  // A folder that is missing holds nothing; a file named by the prefix is listed.
  ASSERT_OK_AND_ASSIGN(auto missing, store->List("absent/"));
  EXPECT_TRUE(missing.empty());
  ASSERT_OK_AND_ASSIGN(auto named, store->List("fold"));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].path, "folder");
}

}  // namespace
}  // namespace ampdelta::storage
