#include "ampdelta/storage/object_store_registry.h"

#include <arrow/buffer.h>

#include "ampdelta/storage/local_store.h"
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

TEST(ObjectStoreRegistryTest, LocalKeysCannotEscapeTheRoot) {
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto store, LocalStore::Make(dir.path()));
  EXPECT_THAT(
      store->Put("../escape", arrow::Buffer::FromString("x"), PutMode::kOverwrite),
      testing::StatusHasMessage("escapes the root"));
}

}  // namespace
}  // namespace ampdelta::storage
