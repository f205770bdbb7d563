#include "ampdelta/delta/read/deletion_vector.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <arrow/array/array_primitive.h>
#include <arrow/buffer.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <roaring/roaring.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

using ::ampdelta::testing::HasErrorCode;
using ::ampdelta::testing::StatusHasMessage;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

bool IsCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string FixturePath(const std::string& relative) {
  return ampdelta::testing::SourceDir() + "/../shared/fixtures/" + relative;
}

// Fail under CI=true, otherwise skip, when a fixture table is missing.
#define AMPDELTA_REQUIRE_FIXTURE(path)                                        \
  do {                                                                        \
    if (!std::filesystem::is_directory(path)) {                               \
      if (IsCi()) FAIL() << "fixture missing: " << (path);                    \
      GTEST_SKIP() << "fixture missing: " << (path)                           \
                   << " (expected ../shared/fixtures beside the repository)"; \
    }                                                                         \
  } while (false)

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string Le32(uint32_t v) {
  return {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
          static_cast<char>(v >> 24)};
}

std::string Le64(uint64_t v) {
  return Le32(static_cast<uint32_t>(v)) + Le32(static_cast<uint32_t>(v >> 32));
}

std::string Le16(uint32_t v) { return {static_cast<char>(v), static_cast<char>(v >> 8)}; }

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
          static_cast<char>(v >> 8), static_cast<char>(v)};
}

uint32_t Crc32(const std::string& bytes) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()),
                                     static_cast<uInt>(bytes.size())));
}

constexpr uint32_t kMagic = 1681511377;

struct RoaringFree {
  void operator()(roaring_bitmap_t* bitmap) const { roaring_bitmap_free(bitmap); }
};
using Roaring = std::unique_ptr<roaring_bitmap_t, RoaringFree>;

std::string PortableBytes(const roaring_bitmap_t* bitmap) {
  std::string out(roaring_bitmap_portable_size_in_bytes(bitmap), '\0');
  const size_t written = roaring_bitmap_portable_serialize(bitmap, out.data());
  out.resize(written);
  return out;
}

// Serialize row indexes the way Delta does, built with CRoaring independently of the
// code under test: magic, bucket count, then (key, 32-bit portable bitmap) per bucket.
std::string SerializeRoaring64(const std::vector<uint64_t>& rows,
                               bool run_optimize = true) {
  std::map<uint32_t, Roaring> buckets;
  for (uint64_t row : rows) {
    auto& bucket = buckets[static_cast<uint32_t>(row >> 32)];
    if (!bucket) bucket.reset(roaring_bitmap_create());
    roaring_bitmap_add(bucket.get(), static_cast<uint32_t>(row));
  }
  std::string out = Le32(kMagic) + Le64(buckets.size());
  for (auto& [key, bitmap] : buckets) {
    if (run_optimize) roaring_bitmap_run_optimize(bitmap.get());
    out += Le32(key) + PortableBytes(bitmap.get());
  }
  return out;
}

// A DV file: version byte, then per bitmap a big-endian length, the bytes and their CRC.
std::string MakeDvFile(const std::vector<std::string>& bitmaps) {
  std::string out(1, '\x01');
  for (const auto& bitmap : bitmaps) {
    out += Be32(static_cast<uint32_t>(bitmap.size())) + bitmap + Be32(Crc32(bitmap));
  }
  return out;
}

DeletionVectorDescriptor FileDv(std::string path, std::optional<int32_t> offset,
                                int32_t size, int64_t cardinality) {
  DeletionVectorDescriptor dv;
  dv.storage_type = "u";
  dv.path_or_inline_dv = std::move(path);
  dv.offset = offset;
  dv.size_in_bytes = size;
  dv.cardinality = cardinality;
  return dv;
}

DeletionVectorDescriptor InlineDv(const std::string& bitmap, int64_t cardinality) {
  std::string padded = bitmap;
  padded.resize((bitmap.size() + 3) / 4 * 4, '\0');
  DeletionVectorDescriptor dv;
  dv.storage_type = "i";
  dv.path_or_inline_dv = EncodeZ85(padded).ValueOrDie();
  dv.size_in_bytes = static_cast<int32_t>(bitmap.size());
  dv.cardinality = cardinality;
  return dv;
}

std::shared_ptr<arrow::Buffer> Buf(const std::string& s) {
  return std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(s.data()),
                                         static_cast<int64_t>(s.size()));
}

// Copies the string into the store (MemoryStore copies on Put).
void PutObject(storage::ObjectStore& store, const std::string& key,
               const std::string& data) {
  ASSERT_OK(store.Put(key, Buf(data), storage::PutMode::kOverwrite));
}

std::vector<bool> MaskValues(const arrow::BooleanArray& mask) {
  std::vector<bool> values;
  for (int64_t i = 0; i < mask.length(); ++i) values.push_back(mask.Value(i));
  return values;
}

// A fixed UUID and its `u` encoding.
const std::string kUuidBytes(
    "\x61\xd1\x6c\x75\x69\x94\x46\xb7\xa1\x5b\x8b\x53\x88\x52\xe5\x0e", 16);
const std::string kUuidFileName =
    "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin";

// --- Z85 ------------------------------------------------------------------------------

TEST(Z85Test, DecodesZeroMqSpecVector) {
  ASSERT_OK_AND_ASSIGN(std::string bytes, DecodeZ85("HelloWorld"));
  EXPECT_EQ(bytes, std::string("\x86\x4F\xD2\x6F\xB5\x59\xF7\x5B", 8));
}

TEST(Z85Test, EncodesZeroMqSpecVector) {
  ASSERT_OK_AND_ASSIGN(std::string text,
                       EncodeZ85(std::string("\x86\x4F\xD2\x6F\xB5\x59\xF7\x5B", 8)));
  EXPECT_EQ(text, "HelloWorld");
}

TEST(Z85Test, EmptyInputRoundTrips) {
  ASSERT_OK_AND_ASSIGN(std::string bytes, DecodeZ85(""));
  EXPECT_THAT(bytes, IsEmpty());
  ASSERT_OK_AND_ASSIGN(std::string text, EncodeZ85(""));
  EXPECT_THAT(text, IsEmpty());
}

TEST(Z85Test, AllByteValuesRoundTrip) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(255 - i));
  ASSERT_OK_AND_ASSIGN(std::string text, EncodeZ85(bytes));
  EXPECT_EQ(text.size(), 320u);
  ASSERT_OK_AND_ASSIGN(std::string back, DecodeZ85(text));
  EXPECT_EQ(back, bytes);
}

TEST(Z85Test, ExtremeGroupsDecode) {
  ASSERT_OK_AND_ASSIGN(std::string zeros, DecodeZ85("00000"));
  EXPECT_EQ(zeros, std::string(4, '\0'));
  // 0xFFFFFFFF is the largest 32-bit group.
  ASSERT_OK_AND_ASSIGN(std::string text, EncodeZ85(std::string(4, '\xff')));
  EXPECT_EQ(text, "%nSc0");
  ASSERT_OK_AND_ASSIGN(std::string ones, DecodeZ85(text));
  EXPECT_EQ(ones, std::string(4, '\xff'));
}

TEST(Z85Test, DecodeRejectsLengthNotMultipleOfFive) {
  auto result = DecodeZ85("Hello");
  ASSERT_OK(result);
  auto bad = DecodeZ85("HelloWorl");
  EXPECT_TRUE(bad.status().IsInvalid());
  EXPECT_THAT(bad, StatusHasMessage("not a multiple of 5"));
}

TEST(Z85Test, DecodeRejectsCharacterOutsideAlphabet) {
  auto bad = DecodeZ85("Hello Worl");
  EXPECT_TRUE(bad.status().IsInvalid());
  EXPECT_THAT(bad, StatusHasMessage("invalid Z85 character 0x20 at position 5"));
  EXPECT_TRUE(DecodeZ85(std::string("Hell\0", 5)).status().IsInvalid());
  EXPECT_TRUE(DecodeZ85("Hell\"").status().IsInvalid());
}

TEST(Z85Test, DecodeRejectsGroupAbove32Bits) {
  // "%nSc1" is 0xFFFFFFFF + 1; "#####" is 85^5 - 1.
  EXPECT_THAT(DecodeZ85("%nSc1"), StatusHasMessage("exceeds 32 bits"));
  EXPECT_THAT(DecodeZ85("00000#####"), StatusHasMessage("at position 5 exceeds 32 bits"));
}

TEST(Z85Test, EncodeRejectsLengthNotMultipleOfFour) {
  auto bad = EncodeZ85("abc");
  EXPECT_TRUE(bad.status().IsInvalid());
  EXPECT_THAT(bad, StatusHasMessage("not a multiple of 4"));
}

// --- UUID paths -----------------------------------------------------------------------

TEST(UuidDeletionVectorPathTest, DecodesFixtureUuid) {
  // From delta-rs/table-with-dv-small, whose DV file has this name.
  ASSERT_OK_AND_ASSIGN(std::string path, UuidDeletionVectorPath("vBn[lx{q8@P<9BNH/isA"));
  EXPECT_EQ(path, kUuidFileName);
}

TEST(UuidDeletionVectorPathTest, RandomPrefixBecomesDirectory) {
  // PROTOCOL.md "JSON Example 1": prefix `ab`, UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61.
  ASSERT_OK_AND_ASSIGN(std::string path,
                       UuidDeletionVectorPath("ab^-aqEH.-t@S}K{vb[*k^"));
  EXPECT_EQ(path, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin");
}

TEST(UuidDeletionVectorPathTest, RejectsShortOrInvalidText) {
  EXPECT_THAT(UuidDeletionVectorPath("vBn[lx{q8@P<9BNH/is"),
              HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(UuidDeletionVectorPath("vBn[lx{q8@P<9BNH/is "),
              StatusHasMessage("does not end in a Z85 UUID"));
}

// --- DeletedRows ----------------------------------------------------------------------

TEST(DeletedRowsTest, EmptySetDeletesNothing) {
  DeletedRows rows;
  EXPECT_TRUE(rows.empty());
  EXPECT_EQ(rows.cardinality(), 0);
  EXPECT_FALSE(rows.Contains(0));
  EXPECT_THAT(rows.ToVector(), IsEmpty());
  ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(10, 3));
  EXPECT_THAT(MaskValues(*mask), ElementsAre(true, true, true));
  EXPECT_EQ(mask->null_count(), 0);
}

TEST(DeletedRowsTest, FromRowsSortsAndDeduplicatesAcrossBuckets) {
  const uint64_t k4g = uint64_t{1} << 32;
  ASSERT_OK_AND_ASSIGN(
      DeletedRows rows,
      DeletedRows::FromRows({5 * k4g + 3, 0, 65536, 5, 65535, k4g, 5, k4g + 7, k4g - 1}));
  EXPECT_EQ(rows.cardinality(), 8);
  EXPECT_THAT(rows.ToVector(),
              ElementsAre(0, 5, 65535, 65536, k4g - 1, k4g, k4g + 7, 5 * k4g + 3));
  EXPECT_TRUE(rows.Contains(k4g + 7));
  EXPECT_FALSE(rows.Contains(k4g + 6));
  EXPECT_FALSE(rows.Contains(2 * k4g + 7));
  EXPECT_FALSE(rows.Contains(3));
}

TEST(DeletedRowsTest, KeepMaskClearsDeletedRowsInRange) {
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, DeletedRows::FromRows({1, 3, 4, 70000}));
  ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(2, 5));
  EXPECT_THAT(MaskValues(*mask), ElementsAre(true, false, false, true, true));
  ASSERT_OK_AND_ASSIGN(auto whole, rows.KeepMask(0, 70001));
  EXPECT_EQ(whole->true_count(), 70001 - 4);
  EXPECT_FALSE(whole->Value(70000));
  ASSERT_OK_AND_ASSIGN(auto after, rows.KeepMask(70001, 100));
  EXPECT_EQ(after->true_count(), 100);
}

TEST(DeletedRowsTest, KeepMaskSpansBucketBoundary) {
  const int64_t k4g = int64_t{1} << 32;
  ASSERT_OK_AND_ASSIGN(DeletedRows rows,
                       DeletedRows::FromRows({static_cast<uint64_t>(k4g - 1),
                                              static_cast<uint64_t>(k4g), 3}));
  ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(k4g - 2, 4));
  EXPECT_THAT(MaskValues(*mask), ElementsAre(true, false, false, true));
}

TEST(DeletedRowsTest, KeepMaskStartsInsideRunContainer) {
  std::vector<uint64_t> run;
  for (uint64_t r = 100; r < 200; ++r) run.push_back(r);
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, DeletedRows::FromRows(run));
  ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(150, 100));
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(mask->Value(i), i >= 50) << i;
}

TEST(DeletedRowsTest, KeepMaskMatchesContainsForRandomRows) {
  std::mt19937_64 random(42);
  std::vector<uint64_t> deleted;
  for (int i = 0; i < 5000; ++i) deleted.push_back(random() % 200000);
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, DeletedRows::FromRows(deleted));
  for (int64_t offset : {0, 1, 777, 65535, 65536, 131071, 199990}) {
    ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(offset, 4099));
    for (int64_t i = 0; i < mask->length(); ++i) {
      ASSERT_EQ(mask->Value(i), !rows.Contains(static_cast<uint64_t>(offset + i)))
          << "row " << offset + i;
    }
  }
}

TEST(DeletedRowsTest, KeepMaskRejectsInvalidRanges) {
  DeletedRows rows;
  EXPECT_TRUE(rows.KeepMask(-1, 3).status().IsInvalid());
  EXPECT_TRUE(rows.KeepMask(0, -3).status().IsInvalid());
  EXPECT_TRUE(rows.KeepMask(std::numeric_limits<int64_t>::max(), 2).status().IsInvalid());
  ASSERT_OK_AND_ASSIGN(auto empty, rows.KeepMask(5, 0));
  EXPECT_EQ(empty->length(), 0);
}

TEST(DeletedRowsTest, CopiesShareTheSameRows) {
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, DeletedRows::FromRows({2, 4}));
  const DeletedRows copy = rows;
  EXPECT_EQ(copy.ToVector(), rows.ToVector());
}

// --- ParseRoaring64Portable -----------------------------------------------------------

TEST(Roaring64Test, RoundTripsCRoaringSerialization) {
  // Array, bitset and run containers in several buckets, including an empty-low bucket.
  std::vector<uint64_t> rows = {0, 3, 65535, 65536, 1000000};
  for (uint64_t r = 200000; r < 210000; r += 2) rows.push_back(r);  // bitset container
  for (uint64_t r = 300000; r < 305000; ++r) rows.push_back(r);     // run container
  const uint64_t k4g = uint64_t{1} << 32;
  rows.push_back(k4g);
  rows.push_back(k4g + 17);
  rows.push_back(7 * k4g + 123456);
  std::sort(rows.begin(), rows.end());
  for (bool run_optimize : {false, true}) {
    ASSERT_OK_AND_ASSIGN(DeletedRows parsed,
                         ParseRoaring64Portable(SerializeRoaring64(rows, run_optimize)));
    EXPECT_EQ(parsed.cardinality(), static_cast<int64_t>(rows.size()));
    EXPECT_THAT(parsed.ToVector(), ElementsAreArray(rows));
  }
}

TEST(Roaring64Test, ProtocolInlineExampleIsNativeFormat) {
  // PROTOCOL.md "JSON Example 3" (rows 3, 4, 7, 11, 18, 29) is not in the portable format
  // the protocol specifies: its 40 bytes are Delta's Java-only "native" layout,
  // big-endian magic 1681511376, bitmap count 1 and size 28, then one 32-bit portable
  // bitmap.
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       DecodeZ85("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"));
  ASSERT_EQ(bytes.size(), 40u);
  EXPECT_EQ(bytes.substr(0, 12), Be32(kMagic - 1) + Be32(1) + Be32(28));
  EXPECT_THAT(ParseRoaring64Portable(bytes),
              HasErrorCode(ErrorCode::kUnsupportedFeature));
  // Its 32-bit bitmap, framed as a portable 64-bit bitmap with key 0, holds the rows.
  const std::string portable = Le32(kMagic) + Le64(1) + Le32(0) + bytes.substr(12);
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, ParseRoaring64Portable(portable));
  EXPECT_THAT(rows.ToVector(), ElementsAre(3, 4, 7, 11, 18, 29));
}

TEST(Roaring64Test, ParsesEmptyBitmap) {
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, ParseRoaring64Portable(SerializeRoaring64({})));
  EXPECT_TRUE(rows.empty());
}

TEST(Roaring64Test, RejectsWrongMagicNumber) {
  std::string bytes = SerializeRoaring64({1, 2});
  bytes[0] ^= 0x40;
  EXPECT_THAT(ParseRoaring64Portable(bytes), HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(ParseRoaring64Portable(bytes), StatusHasMessage("magic number"));
  EXPECT_THAT(ParseRoaring64Portable("ab"), HasErrorCode(ErrorCode::kCorruptLog));
}

TEST(Roaring64Test, ReportsNativeFormatAsUnsupported) {
  for (const std::string& magic : {Le32(kMagic - 1), Be32(kMagic - 1)}) {
    auto result = ParseRoaring64Portable(magic + Le32(0));
    EXPECT_THAT(result, HasErrorCode(ErrorCode::kUnsupportedFeature));
    EXPECT_TRUE(result.status().IsNotImplemented());
    EXPECT_THAT(result, StatusHasMessage("native RoaringBitmapArray format"));
  }
}

TEST(Roaring64Test, RejectsEveryTruncation) {
  const std::string bytes = SerializeRoaring64({1, 2, 70000, (uint64_t{1} << 32) + 5});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THAT(ParseRoaring64Portable(bytes.substr(0, n)),
                HasErrorCode(ErrorCode::kCorruptLog))
        << "prefix of " << n << " bytes";
  }
}

TEST(Roaring64Test, RejectsTrailingBytes) {
  EXPECT_THAT(ParseRoaring64Portable(SerializeRoaring64({1}) + "x"),
              StatusHasMessage("1 unexpected bytes after the last bucket"));
}

TEST(Roaring64Test, RejectsBucketKeysOutOfOrder) {
  Roaring bitmap(roaring_bitmap_create());
  roaring_bitmap_add(bitmap.get(), 1);
  const std::string portable = PortableBytes(bitmap.get());
  const std::string descending =
      Le32(kMagic) + Le64(2) + Le32(5) + portable + Le32(4) + portable;
  EXPECT_THAT(ParseRoaring64Portable(descending), StatusHasMessage("not ascending"));
  const std::string repeated =
      Le32(kMagic) + Le64(2) + Le32(5) + portable + Le32(5) + portable;
  EXPECT_THAT(ParseRoaring64Portable(repeated), StatusHasMessage("not ascending"));
  const std::string high_bit = Le32(kMagic) + Le64(1) + Le32(0x80000000u) + portable;
  EXPECT_THAT(ParseRoaring64Portable(high_bit), StatusHasMessage("high bit"));
}

TEST(Roaring64Test, RejectsImpossibleBucketCount) {
  const std::string bytes =
      Le32(kMagic) + Le64(uint64_t{1} << 60) + std::string(16, '\0');
  EXPECT_THAT(ParseRoaring64Portable(bytes), StatusHasMessage("bucket count"));
}

// One 64-bit bucket (key 0) around a hand-made 32-bit portable bitmap.
std::string Bucket0(const std::string& bitmap32) {
  return Le32(kMagic) + Le64(1) + Le32(0) + bitmap32;
}

// A 32-bit bitmap with one array or bitset container (no-run cookie, offset header).
std::string NoRunContainer(uint32_t cardinality, const std::string& payload) {
  return Le32(12346) + Le32(1) + Le16(0) + Le16(cardinality - 1) + Le32(16) + payload;
}

// A 32-bit bitmap with one run container of (start, length - 1) pairs.
std::string RunContainer(uint32_t cardinality,
                         const std::vector<std::pair<uint32_t, uint32_t>>& runs) {
  std::string out = Le32(12347) + std::string(1, '\x01') + Le16(0) +
                    Le16(cardinality - 1) + Le16(static_cast<uint32_t>(runs.size()));
  for (const auto& [start, length_minus_one] : runs) {
    out += Le16(start) + Le16(length_minus_one);
  }
  return out;
}

TEST(Roaring64Test, ParsesHandMadeContainers) {
  ASSERT_OK_AND_ASSIGN(DeletedRows array, ParseRoaring64Portable(Bucket0(NoRunContainer(
                                              3, Le16(2) + Le16(5) + Le16(65535)))));
  EXPECT_THAT(array.ToVector(), ElementsAre(2, 5, 65535));
  ASSERT_OK_AND_ASSIGN(
      DeletedRows runs,
      ParseRoaring64Portable(Bucket0(RunContainer(5, {{1, 2}, {10, 0}, {65535, 0}}))));
  EXPECT_THAT(runs.ToVector(), ElementsAre(1, 2, 3, 10, 65535));
  std::string bits(8192, '\0');
  for (int i = 0; i < 8192; ++i) bits[i] = '\x55';  // every even value
  ASSERT_OK_AND_ASSIGN(DeletedRows bitset,
                       ParseRoaring64Portable(Bucket0(NoRunContainer(32768, bits))));
  EXPECT_EQ(bitset.cardinality(), 32768);
  EXPECT_TRUE(bitset.Contains(65534));
  EXPECT_FALSE(bitset.Contains(65535));
}

TEST(Roaring64Test, RejectsInconsistentContainers) {
  // CRoaring 0.2.66's own "safe" deserializer accepts all of these; iterating some of
  // them crashes it, so the reader validates containers itself.
  std::string bits(8192, '\0');
  for (int i = 0; i < 512; ++i) bits[i] = '\xff';  // 4096 values
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"unsorted array", NoRunContainer(2, Le16(5) + Le16(3))},
      {"duplicate in array", NoRunContainer(2, Le16(5) + Le16(5))},
      {"bitset cardinality", NoRunContainer(4097, bits)},
      {"empty run container", RunContainer(1, {})},
      {"overlapping runs", RunContainer(14, {{0, 9}, {5, 3}})},
      {"run past 65535", RunContainer(11, {{65530, 10}})},
      {"run cardinality", RunContainer(5, {{0, 9}})},
      {"unknown cookie", Le32(12345) + Le32(0)},
      {"container count", Le32(12346) + Le32(70000)},
      {"keys not ascending", Le32(12346) + Le32(2) + Le16(1) + Le16(0) + Le16(0) +
                                 Le16(0) + Le32(24) + Le32(26) + Le16(1) + Le16(1)},
      // Found by fuzzing: CRoaring deserializes these, then segfaults iterating them.
      {"fuzzed run flags", std::string("\x3b\x30\x01\x00\x97\xbf\x01\x00\x00\x02\x00\x01"
                                       "\x4c\x00\x00\x01\x00\x01\x00\x02\x00",
                                       21)},
  };
  for (const auto& [name, bitmap32] : cases) {
    EXPECT_THAT(ParseRoaring64Portable(Bucket0(bitmap32)),
                HasErrorCode(ErrorCode::kCorruptLog))
        << name;
  }
  EXPECT_THAT(
      ParseRoaring64Portable(Bucket0(NoRunContainer(4097, bits))),
      StatusHasMessage("bitset container 0 holds 4096 values but its header says 4097 "
                       "(bucket 0, key 0)"));
}

TEST(Roaring64Test, SurvivesCorruptedBytes) {
  // Every single-byte corruption either parses or fails cleanly (run under ASan in CI).
  std::vector<uint64_t> rows = {1, 2, 3, 70000};
  for (uint64_t r = 1000; r < 1100; ++r) rows.push_back(r);
  const std::string good = SerializeRoaring64(rows);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t flip : {0x01, 0x10, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<uint8_t>(bad[i]) ^ flip);
      auto result = ParseRoaring64Portable(bad);
      if (!result.ok()) {
        EXPECT_TRUE(IsError(result.status(), ErrorCode::kCorruptLog) ||
                    IsError(result.status(), ErrorCode::kUnsupportedFeature))
            << result.status().ToString();
      }
    }
  }
}

// --- LoadDeletionVector on synthetic DVs ----------------------------------------------

class LoadDeletionVectorTest : public ::testing::Test {
 protected:
  storage::MemoryStore store_{"table"};
};

TEST_F(LoadDeletionVectorTest, ReadsSeveralDvsFromOneFileByOffset) {
  const std::string first = SerializeRoaring64({0, 9});
  const std::string second = SerializeRoaring64({1, 2, 3});
  PutObject(store_, kUuidFileName, MakeDvFile({first, second}));
  const std::string uuid_z85 = EncodeZ85(kUuidBytes).ValueOrDie();
  const auto size1 = static_cast<int32_t>(first.size());
  const auto size2 = static_cast<int32_t>(second.size());

  ASSERT_OK_AND_ASSIGN(DeletedRows a,
                       LoadDeletionVector(store_, FileDv(uuid_z85, 1, size1, 2)));
  EXPECT_THAT(a.ToVector(), ElementsAre(0, 9));
  ASSERT_OK_AND_ASSIGN(
      DeletedRows b,
      LoadDeletionVector(store_, FileDv(uuid_z85, 1 + 4 + size1 + 4, size2, 3)));
  EXPECT_THAT(b.ToVector(), ElementsAre(1, 2, 3));
  // An absent offset means the first DV, right after the version byte.
  ASSERT_OK_AND_ASSIGN(
      DeletedRows c,
      LoadDeletionVector(store_, FileDv(uuid_z85, std::nullopt, size1, 2)));
  EXPECT_THAT(c.ToVector(), ElementsAre(0, 9));
}

TEST_F(LoadDeletionVectorTest, ReadsFileUnderRandomPrefix) {
  const std::string bitmap = SerializeRoaring64({4});
  PutObject(store_, "ab/" + kUuidFileName, MakeDvFile({bitmap}));
  ASSERT_OK_AND_ASSIGN(
      DeletedRows rows,
      LoadDeletionVector(store_, FileDv("ab" + EncodeZ85(kUuidBytes).ValueOrDie(), 1,
                                        static_cast<int32_t>(bitmap.size()), 1)));
  EXPECT_THAT(rows.ToVector(), ElementsAre(4));
}

TEST_F(LoadDeletionVectorTest, ReadsInlineDvWithPadding) {
  // 34 bytes: Z85 needs 36, so the encoding carries 2 padding bytes.
  const std::string bitmap = SerializeRoaring64({7});
  ASSERT_EQ(bitmap.size() % 4, 2u);
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(store_, InlineDv(bitmap, 1)));
  EXPECT_THAT(rows.ToVector(), ElementsAre(7));
}

TEST_F(LoadDeletionVectorTest, ReadsAbsolutePathUnderStoreRoot) {
  const std::string bitmap = SerializeRoaring64({5, 6});
  PutObject(store_, "dvs/my dv.bin", MakeDvFile({bitmap}));
  DeletionVectorDescriptor dv =
      FileDv("memory://table/dvs/my%20dv.bin", 1, static_cast<int32_t>(bitmap.size()), 2);
  dv.storage_type = "p";
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(store_, dv));
  EXPECT_THAT(rows.ToVector(), ElementsAre(5, 6));
}

TEST_F(LoadDeletionVectorTest, RefusesAbsolutePathOutsideStore) {
  for (const std::string path :
       {"s3://elsewhere/dv.bin", "memory://other/dv.bin", "memory://table/../x/dv.bin",
        "file:///tmp/dv.bin", "/tmp/dv.bin"}) {
    DeletionVectorDescriptor dv = FileDv(path, 1, 10, 1);
    dv.storage_type = "p";
    auto result = LoadDeletionVector(store_, dv);
    EXPECT_THAT(result, HasErrorCode(ErrorCode::kUnsupportedFeature)) << path;
    EXPECT_TRUE(result.status().IsNotImplemented()) << path;
    EXPECT_THAT(result, StatusHasMessage("not under the table store root")) << path;
  }
}

TEST_F(LoadDeletionVectorTest, ReportsChecksumMismatch) {
  const std::string bitmap = SerializeRoaring64({0, 9});
  std::string file = MakeDvFile({bitmap});
  file[1 + 4 + 10] ^= 0x01;  // corrupt a bitmap byte; the stored CRC no longer matches
  PutObject(store_, kUuidFileName, file);
  auto result =
      LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1,
                                        static_cast<int32_t>(bitmap.size()), 2));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(result, StatusHasMessage("checksum mismatch in " + kUuidFileName));
  EXPECT_THAT(result, StatusHasMessage("deletion vector u"));
}

TEST_F(LoadDeletionVectorTest, ReportsLengthMismatch) {
  const std::string bitmap = SerializeRoaring64({0, 9});
  PutObject(store_, kUuidFileName, MakeDvFile({bitmap}));
  const auto size = static_cast<int32_t>(bitmap.size());
  auto result = LoadDeletionVector(
      store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1, size + 4, 2));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(result, StatusHasMessage("length field in " + kUuidFileName +
                                       " at offset 1 is " + std::to_string(size) +
                                       " bytes but the descriptor's sizeInBytes is " +
                                       std::to_string(size + 4)));
}

TEST_F(LoadDeletionVectorTest, ReportsCardinalityMismatch) {
  const std::string bitmap = SerializeRoaring64({0, 9});
  PutObject(store_, kUuidFileName, MakeDvFile({bitmap}));
  auto result =
      LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1,
                                        static_cast<int32_t>(bitmap.size()), 3));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(result, StatusHasMessage(
                          "bitmap holds 2 rows but the descriptor's cardinality is 3"));
  auto inline_result = LoadDeletionVector(store_, InlineDv(bitmap, 1));
  EXPECT_THAT(
      inline_result,
      StatusHasMessage("bitmap holds 2 rows but the descriptor's cardinality is 1"));
}

TEST_F(LoadDeletionVectorTest, ReportsTruncatedFile) {
  const std::string bitmap = SerializeRoaring64({0, 9});
  const std::string file = MakeDvFile({bitmap});
  PutObject(store_, kUuidFileName, file.substr(0, file.size() - 2));
  auto result =
      LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1,
                                        static_cast<int32_t>(bitmap.size()), 2));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(result, StatusHasMessage("is truncated"));
  // An offset beyond the end of the file.
  PutObject(store_, kUuidFileName, file);
  auto beyond =
      LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1000,
                                        static_cast<int32_t>(bitmap.size()), 2));
  EXPECT_THAT(beyond, StatusHasMessage("ends before the length field at offset 1000"));
}

TEST_F(LoadDeletionVectorTest, ReportsBadVersionAndOffset) {
  const std::string bitmap = SerializeRoaring64({0});
  std::string file = MakeDvFile({bitmap});
  file[0] = 2;
  PutObject(store_, kUuidFileName, file);
  const std::string uuid_z85 = EncodeZ85(kUuidBytes).ValueOrDie();
  const auto size = static_cast<int32_t>(bitmap.size());
  EXPECT_THAT(LoadDeletionVector(store_, FileDv(uuid_z85, 1, size, 1)),
              StatusHasMessage("format version 2, expected 1"));
  EXPECT_THAT(LoadDeletionVector(store_, FileDv(uuid_z85, 0, size, 1)),
              StatusHasMessage("offset 0 points into the file header"));
  EXPECT_THAT(LoadDeletionVector(store_, FileDv(uuid_z85, 1, -1, 1)),
              StatusHasMessage("negative sizeInBytes"));
}

TEST_F(LoadDeletionVectorTest, ReportsMalformedBitmapInsideValidFrame) {
  // Correct length and CRC around bytes that are not a roaring bitmap.
  const std::string junk = Le32(kMagic) + Le64(1) + Le32(0) + "garbage!";
  PutObject(store_, kUuidFileName, MakeDvFile({junk}));
  auto result = LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1,
                                                  static_cast<int32_t>(junk.size()), 1));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(result, StatusHasMessage("deletion vector u"));
  EXPECT_THAT(result, StatusHasMessage("malformed deletion vector bitmap"));
}

TEST_F(LoadDeletionVectorTest, ReportsMissingFileAsNotFound) {
  auto result =
      LoadDeletionVector(store_, FileDv(EncodeZ85(kUuidBytes).ValueOrDie(), 1, 34, 1));
  EXPECT_THAT(result, HasErrorCode(ErrorCode::kNotFound));
  EXPECT_THAT(result, StatusHasMessage("deletion vector u"));
}

TEST_F(LoadDeletionVectorTest, ReportsBadInlineData) {
  const std::string bitmap = SerializeRoaring64({7});
  DeletionVectorDescriptor dv = InlineDv(bitmap, 1);
  dv.size_in_bytes += 4;
  EXPECT_THAT(LoadDeletionVector(store_, dv),
              StatusHasMessage("inline data decodes to 36 bytes but the descriptor's "
                               "sizeInBytes is 38"));
  dv = InlineDv(bitmap, 1);
  dv.path_or_inline_dv[3] = ' ';
  EXPECT_THAT(LoadDeletionVector(store_, dv), HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(LoadDeletionVector(store_, dv), StatusHasMessage("invalid Z85 character"));
}

TEST_F(LoadDeletionVectorTest, RejectsUnknownStorageType) {
  DeletionVectorDescriptor dv = FileDv("whatever", 1, 10, 1);
  dv.storage_type = "x";
  EXPECT_THAT(LoadDeletionVector(store_, dv), HasErrorCode(ErrorCode::kCorruptLog));
  EXPECT_THAT(LoadDeletionVector(store_, dv),
              StatusHasMessage("unknown storageType 'x'"));
}

TEST(LoadDeletionVectorLocalTest, ReadsFileUriAndBarePathUnderLocalRoot) {
  ampdelta::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string root = dir.path() + "/my table";
  ASSERT_OK_AND_ASSIGN(auto store, storage::LocalStore::Make(root));
  const std::string bitmap = SerializeRoaring64({1, 8});
  PutObject(*store, "sub dir/dv.bin", MakeDvFile({bitmap}));
  const auto size = static_cast<int32_t>(bitmap.size());
  for (const std::string& path :
       {"file://" + dir.path() + "/my%20table/sub%20dir/dv.bin",
        "file:" + dir.path() + "/my%20table/sub%20dir/dv.bin",
        "file://localhost" + dir.path() + "/my%20table/sub%20dir/dv.bin",
        dir.path() + "/my%20table/./sub%20dir/dv.bin"}) {
    DeletionVectorDescriptor dv = FileDv(path, 1, size, 2);
    dv.storage_type = "p";
    ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(*store, dv));
    EXPECT_THAT(rows.ToVector(), ElementsAre(1, 8)) << path;
  }
  for (const std::string& path :
       {"file://" + dir.path() + "/other/dv.bin",
        "file://" + dir.path() + "/my%20table/../dv.bin",
        "file://otherhost" + dir.path() + "/my%20table/sub%20dir/dv.bin"}) {
    DeletionVectorDescriptor dv = FileDv(path, 1, size, 2);
    dv.storage_type = "p";
    EXPECT_THAT(LoadDeletionVector(*store, dv),
                HasErrorCode(ErrorCode::kUnsupportedFeature))
        << path;
  }
}

// --- LoadDeletionVector on the fixture tables -----------------------------------------

// A DV of a real table, named by the commit whose `add` carries it. The expected rows
// were derived independently: deltalake 1.6.6 (QueryBuilder, which applies DVs) read the
// table at that version, and the deleted rows are those of the raw Parquet file
// (pyarrow) missing from deltalake's result (the rows are unique, so the match is exact).
struct FixtureDv {
  std::string name;
  std::string table;
  int version;
  std::string data_file;
  int64_t num_records;
  std::vector<uint64_t> deleted;
};

void PrintTo(const FixtureDv& c, std::ostream* os) { *os << c.name; }

class FixtureDeletionVectorTest : public ::testing::TestWithParam<FixtureDv> {
 protected:
  // Find the DV of the add for `data_file` in the commit file of `version`.
  arrow::Result<DeletionVectorDescriptor> FindDv(storage::ObjectStore& store,
                                                 const FixtureDv& c) {
    std::string name = std::to_string(c.version);
    name = "_delta_log/" + std::string(20 - name.size(), '0') + name + ".json";
    ARROW_ASSIGN_OR_RAISE(auto content, store.Get(name));
    ARROW_ASSIGN_OR_RAISE(auto actions, ParseCommit(content->ToString(), name));
    for (const auto& action : actions) {
      const auto* add = std::get_if<Add>(&action);
      if (add != nullptr && add->path == c.data_file && add->deletion_vector) {
        return *add->deletion_vector;
      }
    }
    return arrow::Status::Invalid("no add with a DV for ", c.data_file, " in ", name);
  }
};

TEST_P(FixtureDeletionVectorTest, LoadsExpectedRows) {
  const FixtureDv& c = GetParam();
  const std::string table = FixturePath(c.table);
  AMPDELTA_REQUIRE_FIXTURE(table);
  ASSERT_OK_AND_ASSIGN(auto store, storage::LocalStore::Make(table));
  ASSERT_OK_AND_ASSIGN(DeletionVectorDescriptor dv, FindDv(*store, c));
  ASSERT_EQ(dv.storage_type, "u");

  ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(*store, dv));
  EXPECT_THAT(rows.ToVector(), ElementsAreArray(c.deleted));
  EXPECT_EQ(rows.cardinality(), dv.cardinality);
  ASSERT_OK_AND_ASSIGN(auto mask, rows.KeepMask(0, c.num_records));
  EXPECT_EQ(mask->true_count(), c.num_records - static_cast<int64_t>(c.deleted.size()));
  for (uint64_t row : c.deleted) EXPECT_FALSE(mask->Value(static_cast<int64_t>(row)));
}

TEST_P(FixtureDeletionVectorTest, InlineCopyOfFileBitmapLoadsSameRows) {
  // No fixture table stores a DV inline, so re-encode the file's bitmap bytes as an
  // inline DV (with Z85 padding when the size is not a multiple of 4).
  const FixtureDv& c = GetParam();
  const std::string table = FixturePath(c.table);
  AMPDELTA_REQUIRE_FIXTURE(table);
  ASSERT_OK_AND_ASSIGN(auto store, storage::LocalStore::Make(table));
  ASSERT_OK_AND_ASSIGN(DeletionVectorDescriptor dv, FindDv(*store, c));
  ASSERT_OK_AND_ASSIGN(std::string key, UuidDeletionVectorPath(dv.path_or_inline_dv));
  const std::string file = ReadFile(table + "/" + key);
  const size_t start = static_cast<size_t>(dv.offset.value_or(1)) + 4;
  ASSERT_LE(start + static_cast<size_t>(dv.size_in_bytes), file.size());
  const std::string bitmap = file.substr(start, static_cast<size_t>(dv.size_in_bytes));

  ASSERT_OK_AND_ASSIGN(DeletedRows rows,
                       LoadDeletionVector(*store, InlineDv(bitmap, dv.cardinality)));
  EXPECT_THAT(rows.ToVector(), ElementsAreArray(c.deleted));
}

TEST_P(FixtureDeletionVectorTest, AbsolutePathToSameFileLoadsSameRows) {
  const FixtureDv& c = GetParam();
  const std::string table = FixturePath(c.table);
  AMPDELTA_REQUIRE_FIXTURE(table);
  ASSERT_OK_AND_ASSIGN(auto store, storage::LocalStore::Make(table));
  ASSERT_OK_AND_ASSIGN(DeletionVectorDescriptor dv, FindDv(*store, c));
  ASSERT_OK_AND_ASSIGN(std::string key, UuidDeletionVectorPath(dv.path_or_inline_dv));
  dv.storage_type = "p";
  dv.path_or_inline_dv = store->root_uri() + "/" + key;
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(*store, dv));
  EXPECT_THAT(rows.ToVector(), ElementsAreArray(c.deleted));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FixtureDeletionVectorTest,
    ::testing::Values(
        FixtureDv{"DeltaRsTableWithDvSmall",
                  "delta-rs/table-with-dv-small",
                  1,
                  "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet",
                  10,
                  {0, 9}},
        FixtureDv{"GoldenLogReplayDvKeyCasesV1",
                  "delta-golden/log-replay-dv-key-cases",
                  1,
                  "part-00000-90177277-75c2-48db-92a2-20dcba39fd06-c000.snappy.parquet",
                  50,
                  {0}},
        FixtureDv{"GoldenLogReplayDvKeyCasesV2",
                  "delta-golden/log-replay-dv-key-cases",
                  2,
                  "part-00000-90177277-75c2-48db-92a2-20dcba39fd06-c000.snappy.parquet",
                  50,
                  {0, 7}},
        FixtureDv{"GoldenLogReplayDvKeyCasesV3",
                  "delta-golden/log-replay-dv-key-cases",
                  3,
                  "part-00000-90177277-75c2-48db-92a2-20dcba39fd06-c000.snappy.parquet",
                  50,
                  {0, 7, 14}},
        FixtureDv{
            "GoldenDvPartitionedPart8",
            "delta-golden/dv-partitioned-with-checkpoint",
            15,
            "part=8/part-00001-7c58de64-d72f-4373-8d86-dfdc00fb264e.c000.snappy.parquet",
            3,
            {0}},
        // Two DVs in one file: the second starts at offset 43.
        FixtureDv{"DeltaRsCdfSharedFileFirst",
                  "delta-rs/cdf-table-with-cdc-and-dvs",
                  16,
                  "part-00000-0c45af51-1a43-45ca-a68f-3bbec354d44a.c000.snappy.parquet",
                  2,
                  {0}},
        FixtureDv{"DeltaRsCdfSharedFileSecond",
                  "delta-rs/cdf-table-with-cdc-and-dvs",
                  16,
                  "part-00000-1b2c86ab-c775-4122-8aca-71ea355cde97.c000.snappy.parquet",
                  2,
                  {1}},
        FixtureDv{"DeltaRsCdfRunOfSix",
                  "delta-rs/cdf-table-with-cdc-and-dvs",
                  24,
                  "part-00000-92f71a43-287d-4b61-bc93-321cc9a236d4.c000.snappy.parquet",
                  8,
                  {0, 1, 2, 3, 4, 6}}),
    [](const ::testing::TestParamInfo<FixtureDv>& param_info) {
      return param_info.param.name;
    });

TEST(FixtureDeletionVectorErrorTest, CorruptedCopyOfFixtureFileIsRejected) {
  const std::string table = FixturePath("delta-rs/table-with-dv-small");
  AMPDELTA_REQUIRE_FIXTURE(table);
  const std::string original = ReadFile(table + "/" + kUuidFileName);
  ASSERT_EQ(original.size(), 45u);
  DeletionVectorDescriptor dv = FileDv("vBn[lx{q8@P<9BNH/isA", 1, 36, 2);

  storage::MemoryStore store;
  PutObject(store, kUuidFileName, original);
  ASSERT_OK_AND_ASSIGN(DeletedRows rows, LoadDeletionVector(store, dv));
  EXPECT_THAT(rows.ToVector(), ElementsAre(0, 9));

  std::string bad_crc = original;
  bad_crc[44] ^= 0x01;
  PutObject(store, kUuidFileName, bad_crc);
  EXPECT_THAT(LoadDeletionVector(store, dv), StatusHasMessage("checksum mismatch"));

  std::string bad_length = original;
  bad_length[4] = 35;
  PutObject(store, kUuidFileName, bad_length);
  EXPECT_THAT(LoadDeletionVector(store, dv),
              StatusHasMessage("is 35 bytes but the descriptor's sizeInBytes is 36"));

  PutObject(store, kUuidFileName, original);
  dv.cardinality = 3;
  EXPECT_THAT(
      LoadDeletionVector(store, dv),
      StatusHasMessage("bitmap holds 2 rows but the descriptor's cardinality is 3"));
}

}  // namespace
}  // namespace ampdelta::delta
