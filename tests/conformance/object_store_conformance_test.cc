// One conformance suite that every ObjectStore implementation must pass.

#include <atomic>
#include <filesystem>
#include <thread>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>

#include "ampdelta/storage/fault_store.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/memory_store.h"
#include "ampdelta/storage/object_store_registry.h"
#include "ampdelta/util/uuid.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta::storage {
namespace {

std::shared_ptr<arrow::Buffer> Bytes(const std::string& text) {
  return arrow::Buffer::FromString(text);
}

struct StoreFactory {
  std::string name;
  std::function<std::shared_ptr<ObjectStore>(const std::string& dir)> make;
  /// For cloud stores: the environment variable naming the root URL of an emulator
  /// (tests/interop/test_cloud_stores.py starts the emulators, sets it with the store's
  /// options in the environment, and runs this suite). Unset: the store is not
  /// instantiated.
  const char* root_variable = nullptr;
};

// A cloud store under a fresh prefix of the emulator's bucket/container, so every test
// starts empty.
std::shared_ptr<ObjectStore> OpenCloudStore(const char* root_variable) {
  const char* root = std::getenv(root_variable);
  auto store = OpenObjectStore(std::string(root) + "/" + NewUuid());
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *store : nullptr;
}

class ObjectStoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    const char* variable = GetParam().root_variable;
    store_ =
        variable != nullptr ? OpenCloudStore(variable) : GetParam().make(dir_.path());
    ASSERT_NE(store_, nullptr);
  }

  std::string Read(const std::string& key) {
    auto data = store_->Get(key);
    if (!data.ok()) return "<" + data.status().ToString() + ">";
    return (*data)->ToString();
  }

  testing::TempDir dir_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreConformanceTest, PutThenGetRoundTrips) {
  ASSERT_OK(store_->Put("a/b/c.json", Bytes("hello"), PutMode::kOverwrite));
  EXPECT_EQ(Read("a/b/c.json"), "hello");
  ASSERT_OK_AND_ASSIGN(ObjectMeta meta, store_->Head("a/b/c.json"));
  EXPECT_EQ(meta.path, "a/b/c.json");
  EXPECT_EQ(meta.size, 5);
  EXPECT_GT(meta.last_modified_ms, 1'600'000'000'000);
}

TEST_P(ObjectStoreConformanceTest, MissingObjectsAreNotFound) {
  EXPECT_THAT(store_->Head("nope"), testing::HasErrorCode(ErrorCode::kNotFound));
  EXPECT_THAT(store_->Get("nope"), testing::HasErrorCode(ErrorCode::kNotFound));
  EXPECT_THAT(store_->OpenInputFile("dir/nope"),
              testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("nothing/", ""));
  EXPECT_TRUE(listing.empty());
}

TEST_P(ObjectStoreConformanceTest, RangedReadsAndRandomAccess) {
  ASSERT_OK(store_->Put("f", Bytes("0123456789"), PutMode::kOverwrite));
  ASSERT_OK_AND_ASSIGN(auto middle, store_->GetRange("f", 2, 3));
  EXPECT_EQ(middle->ToString(), "234");
  ASSERT_OK_AND_ASSIGN(auto tail, store_->GetRange("f", 8, 100));
  EXPECT_EQ(tail->ToString(), "89");
  ASSERT_OK_AND_ASSIGN(auto file, store_->OpenInputFile("f"));
  ASSERT_OK_AND_ASSIGN(int64_t size, file->GetSize());
  EXPECT_EQ(size, 10);
  ASSERT_OK_AND_ASSIGN(auto slice, file->ReadAt(5, 2));
  EXPECT_EQ(slice->ToString(), "56");
}

TEST_P(ObjectStoreConformanceTest, ListIsSortedRecursiveAndHonoursPrefixAndStartAfter) {
  for (const char* key : {"_delta_log/00000000000000000002.json", "x=1/part-b.parquet",
                          "_delta_log/00000000000000000000.json", "x=1/part-a.parquet",
                          "_delta_log/_sidecars/s.parquet",
                          "_delta_log/00000000000000000001.json", "top.parquet"}) {
    ASSERT_OK(store_->Put(key, Bytes(key), PutMode::kOverwrite));
  }
  ASSERT_OK_AND_ASSIGN(auto all, store_->List("", ""));
  ASSERT_EQ(all.size(), 7u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].path, all[i].path);

  ASSERT_OK_AND_ASSIGN(
      auto log, store_->List("_delta_log/", "_delta_log/00000000000000000000.json"));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].path, "_delta_log/00000000000000000001.json");
  EXPECT_EQ(log[2].path, "_delta_log/_sidecars/s.parquet");

  ASSERT_OK_AND_ASSIGN(auto partial, store_->List("_delta_log/0000", ""));
  EXPECT_EQ(partial.size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto partition, store_->List("x=1/", ""));
  ASSERT_EQ(partition.size(), 2u);
  EXPECT_EQ(partition[0].size,
            static_cast<int64_t>(std::string("x=1/part-a.parquet").size()));
}

TEST_P(ObjectStoreConformanceTest, OverwriteReplacesContent) {
  ASSERT_OK(store_->Put("k", Bytes("one"), PutMode::kOverwrite));
  ASSERT_OK(store_->Put("k", Bytes("two!"), PutMode::kOverwrite));
  EXPECT_EQ(Read("k"), "two!");
}

TEST_P(ObjectStoreConformanceTest, CreateIfAbsentRefusesExistingObject) {
  ASSERT_OK(store_->Put("_delta_log/00000000000000000000.json", Bytes("first"),
                        PutMode::kCreateIfAbsent));
  auto second = store_->Put("_delta_log/00000000000000000000.json", Bytes("second"),
                            PutMode::kCreateIfAbsent);
  EXPECT_THAT(second, testing::HasErrorCode(ErrorCode::kPreconditionFailed));
  EXPECT_EQ(Read("_delta_log/00000000000000000000.json"), "first");
}

TEST_P(ObjectStoreConformanceTest, ConcurrentCreateIfAbsentHasExactlyOneWinner) {
  constexpr int kWriters = 16;
  for (int round = 0; round < 5; ++round) {
    const std::string key =
        "_delta_log/0000000000000000000" + std::to_string(round) + ".json";
    std::atomic<int> winners{0};
    std::atomic<int> losers{0};
    std::atomic<int> winner_id{-1};
    std::vector<std::thread> threads;
    for (int i = 0; i < kWriters; ++i) {
      threads.emplace_back([&, i] {
        arrow::Status status = store_->Put(key, Bytes("writer-" + std::to_string(i)),
                                           PutMode::kCreateIfAbsent);
        if (status.ok()) {
          ++winners;
          winner_id = i;
        } else if (IsError(status, ErrorCode::kPreconditionFailed)) {
          ++losers;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(winners.load(), 1) << key;
    EXPECT_EQ(losers.load(), kWriters - 1) << key;
    EXPECT_EQ(Read(key), "writer-" + std::to_string(winner_id.load()));
  }
}

TEST_P(ObjectStoreConformanceTest, DeleteRemovesAndToleratesMissing) {
  ASSERT_OK(store_->Put("d/x", Bytes("x"), PutMode::kOverwrite));
  ASSERT_OK(store_->Put("d/y", Bytes("y"), PutMode::kOverwrite));
  ASSERT_OK(store_->Delete("d/x"));
  EXPECT_THAT(store_->Head("d/x"), testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK(store_->Delete("d/x"));
  ASSERT_OK(store_->DeleteMany({"d/y", "d/z"}));
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("d/", ""));
  EXPECT_TRUE(listing.empty());
}

TEST_P(ObjectStoreConformanceTest, StreamedObjectAppearsOnlyWhenClosed) {
  ASSERT_OK_AND_ASSIGN(auto stream, store_->OpenOutputStream("p=1/part-0.parquet"));
  ASSERT_OK(stream->Write("abc", 3));
  ASSERT_OK(stream->Write(Bytes("def")));
  ASSERT_OK_AND_ASSIGN(int64_t position, stream->Tell());
  EXPECT_EQ(position, 6);
  EXPECT_THAT(store_->Head("p=1/part-0.parquet"),
              testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("", ""));
  EXPECT_TRUE(listing.empty()) << "temporary files must not be listed";
  ASSERT_OK(stream->Close());
  EXPECT_EQ(Read("p=1/part-0.parquet"), "abcdef");
}

TEST_P(ObjectStoreConformanceTest, AbandonedStreamLeavesNothing) {
  {
    ASSERT_OK_AND_ASSIGN(auto aborted, store_->OpenOutputStream("a.parquet"));
    ASSERT_OK(aborted->Write("x", 1));
    ASSERT_OK(aborted->Abort());
    ASSERT_OK_AND_ASSIGN(auto dropped, store_->OpenOutputStream("b.parquet"));
    ASSERT_OK(dropped->Write("y", 1));
  }
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("", ""));
  EXPECT_TRUE(listing.empty());
  if (GetParam().name == "local") {
    size_t entries = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
      if (entry.is_regular_file()) ++entries;
    }
    EXPECT_EQ(entries, 0u) << "no temporary file may remain on disk";
  }
}

TEST_P(ObjectStoreConformanceTest, LargeStreamedObjectRoundTripsInParts) {
  // Larger than a cloud store's part size (16 MiB), so the upload is multipart.
  std::string content(17 * 1024 * 1024 + 123, '\0');
  for (size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<char>((i * 131) >> 7);
  ASSERT_OK_AND_ASSIGN(auto stream, store_->OpenOutputStream("big/part-0.parquet"));
  for (size_t offset = 0; offset < content.size(); offset += 1'000'000) {
    ASSERT_OK(stream->Write(
        content.data() + offset,
        static_cast<int64_t>(std::min<size_t>(1'000'000, content.size() - offset))));
  }
  EXPECT_THAT(store_->Head("big/part-0.parquet"),
              testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK(stream->Close());
  ASSERT_OK_AND_ASSIGN(ObjectMeta meta, store_->Head("big/part-0.parquet"));
  EXPECT_EQ(meta.size, static_cast<int64_t>(content.size()));
  ASSERT_OK_AND_ASSIGN(auto tail,
                       store_->GetRange("big/part-0.parquet", meta.size - 10, 10));
  EXPECT_EQ(tail->ToString(), content.substr(content.size() - 10));
  EXPECT_TRUE(Read("big/part-0.parquet") == content);
}

TEST_P(ObjectStoreConformanceTest, AbandonedMultipartStreamLeavesNothing) {
  {
    ASSERT_OK_AND_ASSIGN(auto stream, store_->OpenOutputStream("big/abandoned.parquet"));
    const std::string chunk(1024 * 1024, 'z');
    for (int i = 0; i < 17; ++i) ASSERT_OK(stream->Write(chunk.data(), 1024 * 1024));
  }
  EXPECT_THAT(store_->Head("big/abandoned.parquet"),
              testing::HasErrorCode(ErrorCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("", ""));
  EXPECT_TRUE(listing.empty());
}

TEST_P(ObjectStoreConformanceTest, KeysWithSpecialCharactersRoundTrip) {
  const std::string key = "x=A%2FA/y=b b/z=é€/part-0 #1.parquet";
  ASSERT_OK(store_->Put(key, Bytes("v"), PutMode::kCreateIfAbsent));
  EXPECT_EQ(Read(key), "v");
  ASSERT_OK_AND_ASSIGN(auto listing, store_->List("x=A%2FA/", ""));
  ASSERT_EQ(listing.size(), 1u);
  EXPECT_EQ(listing[0].path, key);
}

TEST_P(ObjectStoreConformanceTest, AbsoluteKeysAreRejected) {
  EXPECT_FALSE(store_->Put("/etc/passwd", Bytes("x"), PutMode::kOverwrite).ok());
}

// The local stores always; a cloud store when its emulator's root is in the environment.
std::vector<StoreFactory> Stores() {
  std::vector<StoreFactory> stores = {
      StoreFactory{"memory",
                   [](const std::string&) -> std::shared_ptr<ObjectStore> {
                     return std::make_shared<MemoryStore>();
                   }},
      StoreFactory{"local",
                   [](const std::string& dir) -> std::shared_ptr<ObjectStore> {
                     return *LocalStore::Make(dir + "/table");
                   }},
      StoreFactory{"fault_passthrough",
                   [](const std::string& dir) -> std::shared_ptr<ObjectStore> {
                     return std::make_shared<FaultStore>(*LocalStore::Make(dir + "/t"));
                   }}};
  for (const auto& [name, variable] :
       {std::pair<const char*, const char*>{"s3", "AMPDELTA_TEST_S3_ROOT"},
        {"azure", "AMPDELTA_TEST_AZURE_ROOT"},
        {"gcs", "AMPDELTA_TEST_GCS_ROOT"}}) {
    if (std::getenv(variable) != nullptr)
      stores.push_back(StoreFactory{name, nullptr, variable});
  }
  return stores;
}

INSTANTIATE_TEST_SUITE_P(Stores, ObjectStoreConformanceTest,
                         ::testing::ValuesIn(Stores()),
                         [](const ::testing::TestParamInfo<StoreFactory>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace ampdelta::storage
