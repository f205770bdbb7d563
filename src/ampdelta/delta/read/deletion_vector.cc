// Over 600 lines on purpose: one format's rules in one place (Z85, the strict 64-bit
// Roaring portable parser, DV files and their checks against the descriptor).

#include "ampdelta/delta/read/deletion_vector.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <arrow/array/array_primitive.h>
#include <arrow/buffer.h>
#include <arrow/memory_pool.h>
#include <arrow/util/bit_util.h>
#include <roaring/roaring.h>

#include "ampdelta/util/hex.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {
namespace {

// --- Z85 (ZeroMQ RFC 32) --------------------------------------------------------------

constexpr std::string_view kZ85Alphabet =
    "0123456789"
    "abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    ".-:+=^!/*?&<>()[]{}@%$#";

constexpr std::array<int8_t, 256> MakeZ85DecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (size_t i = 0; i < kZ85Alphabet.size(); ++i) {
    table[static_cast<unsigned char>(kZ85Alphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}

constexpr std::array<int8_t, 256> kZ85Decode = MakeZ85DecodeTable();

// --- Deletion Vector Format constants -------------------------------------------------

// PROTOCOL.md "Deletion Vector Format": the magic number in front of the portable 64-bit
// roaring serialization.
constexpr uint32_t kPortableMagic = 1681511377;
// Delta's Java RoaringBitmapArray also has a "native" layout under the next lower magic
// number, which the protocol does not allow in tables; PROTOCOL.md's inline example uses
// it, with the magic number big-endian. Recognise it to name it in the error.
constexpr uint32_t kNativeMagic = 1681511376;
// kNativeMagic stored big-endian and read little-endian.
constexpr uint32_t kNativeMagicSwapped = 0xD0D33964;
// PROTOCOL.md "Deletion Vector File Storage Format": byte 0 of a DV file.
constexpr uint8_t kDvFileFormatVersion = 1;
// Where the first DV of a file starts when the descriptor has no offset: right after the
// version byte (as delta-kernel-rs and Delta Spark read it).
constexpr int32_t kDefaultDvFileOffset = 1;
// Number of Z85 characters encoding the 16 UUID bytes of a `u` DV.
constexpr size_t kUuidZ85Length = 20;
// Smallest serialized 32-bit portable bitmap (cookie + container count).
constexpr size_t kMinPortableBitmapSize = 8;

uint32_t LoadLE16(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
}

uint32_t LoadLE32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint64_t LoadLE64(const uint8_t* p) {
  return static_cast<uint64_t>(LoadLE32(p)) |
         (static_cast<uint64_t>(LoadLE32(p + 4)) << 32);
}

uint32_t LoadBE32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

const uint8_t* Bytes(std::string_view s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

std::string Hex32(uint32_t value) {
  const char bytes[4] = {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
                         static_cast<char>(value >> 8), static_cast<char>(value)};
  return ToHex(std::string_view(bytes, 4));
}

template <typename... Args>
arrow::Status CorruptBitmap(Args&&... args) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError,
                   "malformed deletion vector bitmap: ", std::forward<Args>(args)...);
}

struct RoaringDeleter {
  void operator()(roaring_bitmap_t* bitmap) const { roaring_bitmap_free(bitmap); }
};
using RoaringPtr = std::unique_ptr<roaring_bitmap_t, RoaringDeleter>;

}  // namespace

// --- DeletedRows ----------------------------------------------------------------------

// Buckets of the 64-bit set: the high 32 bits as key, a 32-bit roaring bitmap of the low
// bits as value, strictly ascending by key and never empty.
class DeletedRows::Impl {
 public:
  struct Bucket {
    uint32_t key;
    RoaringPtr bitmap;
  };

  Impl(std::vector<Bucket> buckets, int64_t cardinality)
      : buckets_(std::move(buckets)), cardinality_(cardinality) {}

  const std::vector<Bucket>& buckets() const { return buckets_; }
  int64_t cardinality() const { return cardinality_; }

  // Return the bucket holding `key`, or null.
  const roaring_bitmap_t* Find(uint32_t key) const {
    auto it = std::lower_bound(buckets_.begin(), buckets_.end(), key,
                               [](const Bucket& b, uint32_t k) { return b.key < k; });
    return it != buckets_.end() && it->key == key ? it->bitmap.get() : nullptr;
  }

 private:
  std::vector<Bucket> buckets_;
  int64_t cardinality_;
};

DeletedRows::DeletedRows() = default;

DeletedRows::DeletedRows(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

arrow::Result<DeletedRows> DeletedRows::FromRows(const std::vector<uint64_t>& rows) {
  std::vector<uint64_t> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.empty()) return DeletedRows();

  std::vector<Impl::Bucket> buckets;
  std::vector<uint32_t> low;
  size_t i = 0;
  while (i < sorted.size()) {
    const auto key = static_cast<uint32_t>(sorted[i] >> 32);
    low.clear();
    for (; i < sorted.size() && static_cast<uint32_t>(sorted[i] >> 32) == key; ++i) {
      low.push_back(static_cast<uint32_t>(sorted[i]));
    }
    RoaringPtr bitmap(roaring_bitmap_create());
    if (bitmap == nullptr) return arrow::Status::OutOfMemory("cannot allocate a bitmap");
    roaring_bitmap_add_many(bitmap.get(), low.size(), low.data());
    roaring_bitmap_run_optimize(bitmap.get());
    buckets.push_back(Impl::Bucket{key, std::move(bitmap)});
  }
  return DeletedRows(std::make_shared<const Impl>(std::move(buckets),
                                                  static_cast<int64_t>(sorted.size())));
}

arrow::Result<DeletedRows> DeletedRows::Union(const std::vector<uint64_t>& other) const {
  std::vector<uint64_t> rows = ToVector();
  rows.insert(rows.end(), other.begin(), other.end());
  return FromRows(rows);
}

bool DeletedRows::Contains(uint64_t row) const {
  if (impl_ == nullptr) return false;
  const roaring_bitmap_t* bitmap = impl_->Find(static_cast<uint32_t>(row >> 32));
  return bitmap != nullptr && roaring_bitmap_contains(bitmap, static_cast<uint32_t>(row));
}

int64_t DeletedRows::cardinality() const {
  return impl_ == nullptr ? 0 : impl_->cardinality();
}

std::vector<uint64_t> DeletedRows::ToVector() const {
  std::vector<uint64_t> rows;
  if (impl_ == nullptr) return rows;
  rows.reserve(static_cast<size_t>(impl_->cardinality()));
  for (const auto& bucket : impl_->buckets()) {
    const uint64_t high = static_cast<uint64_t>(bucket.key) << 32;
    roaring_uint32_iterator_t it;
    roaring_init_iterator(bucket.bitmap.get(), &it);
    for (; it.has_value; roaring_advance_uint32_iterator(&it)) {
      rows.push_back(high | it.current_value);
    }
  }
  return rows;
}

arrow::Result<std::shared_ptr<arrow::BooleanArray>> DeletedRows::KeepMask(
    int64_t offset, int64_t length, arrow::MemoryPool* pool) const {
  if (offset < 0 || length < 0 || length > std::numeric_limits<int64_t>::max() - offset) {
    return arrow::Status::Invalid("invalid row range for a keep-mask: offset ", offset,
                                  ", length ", length);
  }
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> bits,
                        arrow::AllocateBitmap(length, pool));
  uint8_t* data = bits->mutable_data();
  arrow::bit_util::SetBitsTo(data, 0, length, true);
  if (impl_ != nullptr && length > 0) {
    const auto begin = static_cast<uint64_t>(offset);
    const auto end = static_cast<uint64_t>(offset + length);  // exclusive
    const auto first_key = static_cast<uint32_t>(begin >> 32);
    const auto last_key = static_cast<uint32_t>((end - 1) >> 32);
    for (const auto& bucket : impl_->buckets()) {
      if (bucket.key < first_key) continue;
      if (bucket.key > last_key) break;
      const uint64_t high = static_cast<uint64_t>(bucket.key) << 32;
      roaring_uint32_iterator_t it;
      roaring_init_iterator(bucket.bitmap.get(), &it);
      if (bucket.key == first_key) {
        roaring_move_uint32_iterator_equalorlarger(&it, static_cast<uint32_t>(begin));
      }
      for (; it.has_value; roaring_advance_uint32_iterator(&it)) {
        const uint64_t row = high | it.current_value;
        if (row >= end) break;
        arrow::bit_util::ClearBit(data, static_cast<int64_t>(row - begin));
      }
    }
  }
  return std::make_shared<arrow::BooleanArray>(length, std::move(bits), nullptr,
                                               /*null_count=*/0);
}

// --- Z85 ------------------------------------------------------------------------------

arrow::Result<std::string> DecodeZ85(std::string_view text) {
  if (text.size() % 5 != 0) {
    return arrow::Status::Invalid("Z85 text length ", text.size(),
                                  " is not a multiple of 5");
  }
  std::string out;
  out.reserve(text.size() / 5 * 4);
  for (size_t group = 0; group < text.size(); group += 5) {
    uint64_t value = 0;
    for (size_t i = group; i < group + 5; ++i) {
      const int8_t digit = kZ85Decode[static_cast<unsigned char>(text[i])];
      if (digit < 0) {
        return arrow::Status::Invalid("invalid Z85 character 0x",
                                      ToHex(std::string_view(&text[i], 1)),
                                      " at position ", i);
      }
      value = value * 85 + static_cast<uint64_t>(digit);
    }
    if (value > std::numeric_limits<uint32_t>::max()) {
      return arrow::Status::Invalid("Z85 group '", text.substr(group, 5),
                                    "' at position ", group, " exceeds 32 bits");
    }
    out.push_back(static_cast<char>(value >> 24));
    out.push_back(static_cast<char>(value >> 16));
    out.push_back(static_cast<char>(value >> 8));
    out.push_back(static_cast<char>(value));
  }
  return out;
}

arrow::Result<std::string> EncodeZ85(std::string_view bytes) {
  if (bytes.size() % 4 != 0) {
    return arrow::Status::Invalid("Z85 input length ", bytes.size(),
                                  " is not a multiple of 4");
  }
  std::string out;
  out.reserve(bytes.size() / 4 * 5);
  const uint8_t* p = Bytes(bytes);
  for (size_t group = 0; group < bytes.size(); group += 4) {
    uint32_t value = (static_cast<uint32_t>(p[group]) << 24) |
                     (static_cast<uint32_t>(p[group + 1]) << 16) |
                     (static_cast<uint32_t>(p[group + 2]) << 8) |
                     static_cast<uint32_t>(p[group + 3]);
    char chars[5];
    for (int i = 4; i >= 0; --i) {
      chars[i] = kZ85Alphabet[value % 85];
      value /= 85;
    }
    out.append(chars, 5);
  }
  return out;
}

// --- Bitmap parsing -------------------------------------------------------------------

namespace {

// RoaringFormatSpec cookies of the 32-bit portable format.
constexpr uint32_t kSerialCookieNoRun = 12346;
constexpr uint32_t kSerialCookie = 12347;
// With run containers, the offset header is present only from this many containers on.
constexpr uint32_t kNoOffsetThreshold = 4;
// Containers with more values than this are bitsets (absent a run flag).
constexpr uint32_t kMaxArrayCardinality = 4096;
constexpr size_t kBitsetBytes = 8192;

// The unread rest of a serialized bitmap.
struct BitmapBytes {
  std::string_view data;

  arrow::Status Need(size_t n, const char* what) const {
    if (data.size() < n) return CorruptBitmap("truncated ", what);
    return arrow::Status::OK();
  }
};

// A run container of the chunk whose values start at `high`: runs that neither overlap
// nor pass the chunk, holding `cardinality` values.
arrow::Status ReadRunContainer(BitmapBytes* in, uint32_t key, uint32_t cardinality,
                               roaring_bitmap_t* bitmap) {
  const uint32_t high = key << 16;
  ARROW_RETURN_NOT_OK(in->Need(2, "run count"));
  const uint32_t runs = LoadLE16(Bytes(in->data));
  in->data.remove_prefix(2);
  ARROW_RETURN_NOT_OK(in->Need(static_cast<size_t>(runs) * 4, "runs"));
  const uint8_t* p = Bytes(in->data);
  uint32_t total = 0;
  int64_t previous_end = -1;
  for (uint32_t r = 0; r < runs; ++r, p += 4) {
    const uint32_t start = LoadLE16(p);
    const uint32_t end = start + LoadLE16(p + 2);  // inclusive: the field is length - 1
    if (static_cast<int64_t>(start) <= previous_end || end > 0xFFFF) {
      return CorruptBitmap("run container ", key, " has overlapping or oversized runs");
    }
    previous_end = end;
    total += end - start + 1;
    roaring_bitmap_add_range_closed(bitmap, high | start, high | end);
  }
  in->data.remove_prefix(static_cast<size_t>(runs) * 4);
  if (total != cardinality) {
    return CorruptBitmap("run container ", key, " holds ", total,
                         " values but its header says ", cardinality);
  }
  return arrow::Status::OK();
}

// An array container: `cardinality` strictly ascending 16-bit values.
arrow::Status ReadArrayContainer(BitmapBytes* in, uint32_t key, uint32_t cardinality,
                                 std::vector<uint32_t>* values) {
  const uint32_t high = key << 16;
  ARROW_RETURN_NOT_OK(in->Need(static_cast<size_t>(cardinality) * 2, "array container"));
  const uint8_t* p = Bytes(in->data);
  int64_t previous = -1;
  for (uint32_t v = 0; v < cardinality; ++v, p += 2) {
    const uint32_t low = LoadLE16(p);
    if (static_cast<int64_t>(low) <= previous) {
      return CorruptBitmap("array container ", key, " is not strictly ascending");
    }
    previous = low;
    values->push_back(high | low);
  }
  in->data.remove_prefix(static_cast<size_t>(cardinality) * 2);
  return arrow::Status::OK();
}

// A bitset container: 65,536 bits, `cardinality` of them set.
arrow::Status ReadBitsetContainer(BitmapBytes* in, uint32_t key, uint32_t cardinality,
                                  std::vector<uint32_t>* values) {
  const uint32_t high = key << 16;
  ARROW_RETURN_NOT_OK(in->Need(kBitsetBytes, "bitset container"));
  const uint8_t* p = Bytes(in->data);
  for (uint32_t byte = 0; byte < kBitsetBytes; ++byte) {
    for (uint32_t bit = 0; bit < 8; ++bit) {
      if ((p[byte] >> bit) & 1) values->push_back(high | (byte * 8 + bit));
    }
  }
  in->data.remove_prefix(kBitsetBytes);
  if (values->size() != cardinality) {
    return CorruptBitmap("bitset container ", key, " holds ", values->size(),
                         " values but its header says ", cardinality);
  }
  return arrow::Status::OK();
}

// The header of a portable 32-bit bitmap: its container count, the run flags (with the
// run cookie) and the container headers; the offsets, which only help random access,
// are skipped.
struct BitmapHeader {
  uint32_t size = 0;
  std::string_view run_flags;
  std::string_view headers;

  bool IsRun(uint32_t i) const {
    return !run_flags.empty() && (static_cast<uint8_t>(run_flags[i / 8]) >> (i % 8)) & 1;
  }
};

arrow::Result<BitmapHeader> ReadBitmapHeader(BitmapBytes* in) {
  BitmapHeader header;
  ARROW_RETURN_NOT_OK(in->Need(4, "cookie"));
  const uint32_t cookie = LoadLE32(Bytes(in->data));
  in->data.remove_prefix(4);
  bool has_offsets = true;
  if ((cookie & 0xFFFF) == kSerialCookie) {
    header.size = (cookie >> 16) + 1;
    const size_t flag_bytes = (header.size + 7) / 8;
    ARROW_RETURN_NOT_OK(in->Need(flag_bytes, "run-container flags"));
    header.run_flags = in->data.substr(0, flag_bytes);
    in->data.remove_prefix(flag_bytes);
    has_offsets = header.size >= kNoOffsetThreshold;
  } else if (cookie == kSerialCookieNoRun) {
    ARROW_RETURN_NOT_OK(in->Need(4, "container count"));
    header.size = LoadLE32(Bytes(in->data));
    in->data.remove_prefix(4);
    if (header.size > 65536) {
      return CorruptBitmap("container count ", header.size, " exceeds 65536");
    }
  } else {
    return CorruptBitmap("unknown 32-bit bitmap cookie ", cookie);
  }
  const size_t header_bytes = static_cast<size_t>(header.size) * 4;
  ARROW_RETURN_NOT_OK(in->Need(header_bytes, "container headers"));
  header.headers = in->data.substr(0, header_bytes);
  in->data.remove_prefix(header_bytes);
  if (has_offsets) {
    ARROW_RETURN_NOT_OK(in->Need(header_bytes, "container offsets"));
    in->data.remove_prefix(header_bytes);
  }
  return header;
}

// Consume one 32-bit roaring bitmap in the portable format (RoaringFormatSpec) from the
// front of `*in`, validating it completely, and build it through CRoaring's add API.
//
// CRoaring 0.2.66's roaring_bitmap_portable_deserialize_safe only bounds its reads: it
// accepts containers whose contents are inconsistent (bitset cardinalities that disagree
// with the bits, unsorted arrays, empty or overlapping runs), and iterating such a bitmap
// can crash. A DV is untrusted input, so parse it here instead.
arrow::Result<RoaringPtr> ParsePortableBitmap32(std::string_view* in) {
  BitmapBytes bytes{*in};
  ARROW_ASSIGN_OR_RAISE(const BitmapHeader header, ReadBitmapHeader(&bytes));
  RoaringPtr bitmap(roaring_bitmap_create());
  if (bitmap == nullptr) return arrow::Status::OutOfMemory("cannot allocate a bitmap");
  std::vector<uint32_t> values;
  int32_t previous_key = -1;
  for (uint32_t i = 0; i < header.size; ++i) {
    const uint8_t* container = Bytes(header.headers) + 4 * i;
    const uint32_t key = LoadLE16(container);
    const uint32_t cardinality = LoadLE16(container + 2) + 1;
    if (static_cast<int32_t>(key) <= previous_key) {
      return CorruptBitmap("container keys are not ascending (", key, " after ",
                           previous_key, ")");
    }
    previous_key = static_cast<int32_t>(key);
    if (header.IsRun(i)) {
      ARROW_RETURN_NOT_OK(ReadRunContainer(&bytes, key, cardinality, bitmap.get()));
      continue;
    }
    values.clear();
    ARROW_RETURN_NOT_OK(cardinality <= kMaxArrayCardinality
                            ? ReadArrayContainer(&bytes, key, cardinality, &values)
                            : ReadBitsetContainer(&bytes, key, cardinality, &values));
    roaring_bitmap_add_many(bitmap.get(), values.size(), values.data());
  }
  *in = bytes.data;
  return bitmap;
}

}  // namespace

namespace {

void AppendLE32(std::string* out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8)
    out->push_back(static_cast<char>(value >> shift));
}

void AppendBE32(std::string* out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<char>(value >> shift));
}

}  // namespace

std::string SerializeRoaring64Portable(const DeletedRows& rows) {
  std::string out;
  AppendLE32(&out, kPortableMagic);
  const uint64_t buckets = rows.impl_ == nullptr ? 0 : rows.impl_->buckets().size();
  AppendLE32(&out, static_cast<uint32_t>(buckets));
  AppendLE32(&out, static_cast<uint32_t>(buckets >> 32));
  if (rows.impl_ == nullptr) return out;
  for (const auto& bucket : rows.impl_->buckets()) {
    AppendLE32(&out, bucket.key);
    const size_t size = roaring_bitmap_portable_size_in_bytes(bucket.bitmap.get());
    const size_t at = out.size();
    out.resize(at + size);
    roaring_bitmap_portable_serialize(bucket.bitmap.get(), out.data() + at);
  }
  return out;
}

std::string EncodeDeletionVectorFile(std::string_view bitmap) {
  std::string out;
  out.reserve(1 + 4 + bitmap.size() + 4);
  out.push_back(static_cast<char>(kDvFileFormatVersion));
  AppendBE32(&out, static_cast<uint32_t>(bitmap.size()));
  out.append(bitmap);
  AppendBE32(&out, static_cast<uint32_t>(
                       crc32(0L, Bytes(bitmap), static_cast<uInt>(bitmap.size()))));
  return out;
}

arrow::Result<std::string> UuidDeletionVectorPathOrInline(const std::string& prefix,
                                                          std::string_view uuid) {
  std::string hex;
  for (const char c : uuid) {
    if (c != '-') hex.push_back(c);
  }
  ARROW_ASSIGN_OR_RAISE(std::string bytes, FromHex(hex));
  if (bytes.size() != 16 || uuid.size() != 36) {
    return arrow::Status::Invalid("malformed UUID '", uuid, "'");
  }
  ARROW_ASSIGN_OR_RAISE(std::string encoded, EncodeZ85(bytes));
  return prefix + encoded;
}

arrow::Result<DeletedRows> ParseRoaring64Portable(std::string_view bytes) {
  if (bytes.size() < 4) {
    return CorruptBitmap(bytes.size(), " bytes, too short for the magic number");
  }
  const uint32_t magic = LoadLE32(Bytes(bytes));
  if (magic == kNativeMagic || magic == kNativeMagicSwapped) {
    return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                     "deletion vector bitmap uses the native RoaringBitmapArray format "
                     "(first bytes 0x",
                     ToHex(bytes.substr(0, 4)),
                     "); only the portable format (magic number ", kPortableMagic,
                     ") is supported");
  }
  if (magic != kPortableMagic) {
    return CorruptBitmap("magic number is ", magic, ", expected ", kPortableMagic);
  }
  std::string_view rest = bytes.substr(4);
  if (rest.size() < 8) return CorruptBitmap("truncated bucket count");
  const uint64_t bucket_count = LoadLE64(Bytes(rest));
  rest.remove_prefix(8);
  // Every bucket takes at least a key and an empty 32-bit bitmap; bounding the count by
  // the bytes left keeps a corrupt count from driving a huge allocation.
  if (bucket_count > rest.size() / (4 + kMinPortableBitmapSize)) {
    return CorruptBitmap("bucket count ", bucket_count, " does not fit in ", rest.size(),
                         " bytes");
  }

  std::vector<DeletedRows::Impl::Bucket> buckets;
  buckets.reserve(static_cast<size_t>(bucket_count));
  int64_t cardinality = 0;
  for (uint64_t b = 0; b < bucket_count; ++b) {
    if (rest.size() < 4) return CorruptBitmap("truncated key of bucket ", b);
    const uint32_t key = LoadLE32(Bytes(rest));
    rest.remove_prefix(4);
    // PROTOCOL.md "Deletion Vector Format": keys ascend and never have the high bit set.
    if ((key & 0x80000000u) != 0) {
      return CorruptBitmap("bucket ", b, " has key ", key, " with the high bit set");
    }
    if (!buckets.empty() && key <= buckets.back().key) {
      return CorruptBitmap("bucket keys are not ascending (", key, " after ",
                           buckets.back().key, ")");
    }
    auto parsed = ParsePortableBitmap32(&rest);
    if (!parsed.ok()) {
      return parsed.status().WithMessage(parsed.status().message(), " (bucket ", b,
                                         ", key ", key, ")");
    }
    RoaringPtr bitmap = std::move(parsed).ValueUnsafe();
    const uint64_t count = roaring_bitmap_get_cardinality(bitmap.get());
    if (count == 0) continue;
    cardinality += static_cast<int64_t>(count);
    buckets.push_back(DeletedRows::Impl::Bucket{key, std::move(bitmap)});
  }
  if (!rest.empty()) {
    return CorruptBitmap(rest.size(), " unexpected bytes after the last bucket");
  }
  if (buckets.empty()) return DeletedRows();
  return DeletedRows(
      std::make_shared<const DeletedRows::Impl>(std::move(buckets), cardinality));
}

// --- Loading --------------------------------------------------------------------------

namespace {

// A short name for a DV in messages; inline DVs can be kilobytes of Z85.
std::string DvName(const DeletionVectorDescriptor& dv) {
  constexpr size_t kMaxLength = 64;
  std::string id = dv.UniqueId();
  if (id.size() > kMaxLength) id = id.substr(0, kMaxLength) + "...";
  return id;
}

template <typename... Args>
arrow::Status CorruptDv(const DeletionVectorDescriptor& dv, Args&&... args) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "deletion vector ",
                   DvName(dv), ": ", std::forward<Args>(args)...);
}

// Prefix a bitmap or store error with the DV's name, keeping its detail.
arrow::Status Annotate(const DeletionVectorDescriptor& dv, const arrow::Status& st) {
  return st.WithMessage("deletion vector ", DvName(dv), ": ", st.message());
}

arrow::Status CheckCardinality(const DeletionVectorDescriptor& dv,
                               const DeletedRows& rows) {
  if (rows.cardinality() != dv.cardinality) {
    return CorruptDv(dv, "bitmap holds ", rows.cardinality(),
                     " rows but the descriptor's cardinality is ", dv.cardinality);
  }
  return arrow::Status::OK();
}

std::string FormatUuid(std::string_view bytes) {
  const std::string hex = ToHex(bytes);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

// Resolve a `p` DV (an absolute path or URI, URI-encoded like add.path) to a key of the
// table store, when it lies under the store's root.
arrow::Result<std::string> AbsoluteDvKey(const storage::ObjectStore& store,
                                         const DeletionVectorDescriptor& dv) {
  const std::string& location = dv.path_or_inline_dv;
  if (auto key = store.KeyOf(location)) return *key;
  const std::string root = store.root_uri();
  return MakeError(ErrorCode::kUnsupportedFeature, arrow::StatusCode::NotImplemented,
                   "deletion vector ", DvName(dv), ": absolute path '", location,
                   "' is not under the table store root '", root,
                   "'; reading deletion vectors from other locations is not supported");
}

// Read one DV from a DV file (PROTOCOL.md "Deletion Vector File Storage Format"):
// byte 0 is the format version; at `offset` a big-endian length, the bitmap, and the
// big-endian CRC-32 of the bitmap.
arrow::Result<DeletedRows> ReadDvFile(storage::ObjectStore& store, const std::string& key,
                                      const DeletionVectorDescriptor& dv) {
  const int64_t offset = dv.offset.value_or(kDefaultDvFileOffset);
  if (offset < 1) {
    return CorruptDv(dv, "offset ", offset, " points into the file header of ", key);
  }
  if (dv.size_in_bytes < 0) {
    return CorruptDv(dv, "negative sizeInBytes ", dv.size_in_bytes);
  }
  const int64_t record_length = 4 + static_cast<int64_t>(dv.size_in_bytes) + 4;

  // The version byte and the record in one request when the record follows it directly.
  std::shared_ptr<arrow::Buffer> header;
  std::shared_ptr<arrow::Buffer> record;
  if (offset == 1) {
    auto both = store.GetRange(key, 0, 1 + record_length);
    if (!both.ok()) return Annotate(dv, both.status());
    header = *both;
    if (header->size() > 1) record = arrow::SliceBuffer(header, 1);
  } else {
    auto first = store.GetRange(key, 0, 1);
    if (!first.ok()) return Annotate(dv, first.status());
    header = *first;
    auto rest = store.GetRange(key, offset, record_length);
    if (!rest.ok()) return Annotate(dv, rest.status());
    record = *rest;
  }
  if (header->size() < 1) return CorruptDv(dv, "file ", key, " is empty");
  if (header->data()[0] != kDvFileFormatVersion) {
    return CorruptDv(dv, "file ", key, " has format version ",
                     static_cast<int>(header->data()[0]), ", expected ",
                     static_cast<int>(kDvFileFormatVersion));
  }
  const int64_t got = record == nullptr ? 0 : record->size();
  if (got < 4) {
    return CorruptDv(dv, "file ", key, " ends before the length field at offset ",
                     offset);
  }
  const uint8_t* p = record->data();
  const uint32_t stored_size = LoadBE32(p);
  if (stored_size != static_cast<uint32_t>(dv.size_in_bytes)) {
    return CorruptDv(dv, "length field in ", key, " at offset ", offset, " is ",
                     stored_size, " bytes but the descriptor's sizeInBytes is ",
                     dv.size_in_bytes);
  }
  if (got < record_length) {
    return CorruptDv(dv, "file ", key, " is truncated: ", got, " of ", record_length,
                     " bytes from offset ", offset);
  }
  const uint8_t* bitmap = p + 4;
  const uint32_t stored_crc = LoadBE32(bitmap + dv.size_in_bytes);
  const auto computed_crc =
      static_cast<uint32_t>(crc32(0L, bitmap, static_cast<uInt>(dv.size_in_bytes)));
  if (stored_crc != computed_crc) {
    return CorruptDv(dv, "checksum mismatch in ", key, " at offset ", offset,
                     ": stored CRC-32 0x", Hex32(stored_crc), ", computed 0x",
                     Hex32(computed_crc));
  }
  auto parsed = ParseRoaring64Portable(
      std::string_view(reinterpret_cast<const char*>(bitmap), dv.size_in_bytes));
  if (!parsed.ok()) return Annotate(dv, parsed.status());
  return parsed;
}

}  // namespace

arrow::Result<std::string> UuidDeletionVectorPath(std::string_view path_or_inline_dv) {
  if (path_or_inline_dv.size() < kUuidZ85Length) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError,
                     "deletion vector path '", path_or_inline_dv,
                     "' is shorter than the ", kUuidZ85Length,
                     " Z85 characters of a UUID");
  }
  const std::string_view prefix =
      path_or_inline_dv.substr(0, path_or_inline_dv.size() - kUuidZ85Length);
  auto uuid = DecodeZ85(path_or_inline_dv.substr(prefix.size()));
  if (!uuid.ok()) {
    return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError,
                     "deletion vector path '", path_or_inline_dv,
                     "' does not end in a Z85 UUID: ", uuid.status().message());
  }
  const std::string name = "deletion_vector_" + FormatUuid(*uuid) + ".bin";
  return prefix.empty() ? name : storage::JoinPath(prefix, name);
}

arrow::Result<DeletedRows> LoadDeletionVector(storage::ObjectStore& table_store,
                                              const DeletionVectorDescriptor& dv) {
  if (dv.cardinality < 0) return CorruptDv(dv, "negative cardinality ", dv.cardinality);
  DeletedRows rows;
  if (dv.storage_type == "i") {
    if (dv.size_in_bytes < 0) {
      return CorruptDv(dv, "negative sizeInBytes ", dv.size_in_bytes);
    }
    auto bytes = DecodeZ85(dv.path_or_inline_dv);
    if (!bytes.ok()) return CorruptDv(dv, "inline data: ", bytes.status().message());
    // Z85 works on 4-byte groups, so writers zero-pad the bitmap to a multiple of 4 and
    // sizeInBytes gives the unpadded length (Delta's Base85Codec.decodeBytes drops the
    // padding the same way).
    const auto size = static_cast<size_t>(dv.size_in_bytes);
    if (bytes->size() != (size + 3) / 4 * 4) {
      return CorruptDv(dv, "inline data decodes to ", bytes->size(),
                       " bytes but the descriptor's sizeInBytes is ", dv.size_in_bytes);
    }
    bytes->resize(size);
    auto parsed = ParseRoaring64Portable(*bytes);
    if (!parsed.ok()) return Annotate(dv, parsed.status());
    rows = std::move(parsed).ValueUnsafe();
  } else if (dv.storage_type == "u" || dv.storage_type == "p") {
    std::string key;
    if (dv.storage_type == "u") {
      auto path = UuidDeletionVectorPath(dv.path_or_inline_dv);
      if (!path.ok()) return Annotate(dv, path.status());
      key = std::move(path).ValueUnsafe();
    } else {
      ARROW_ASSIGN_OR_RAISE(key, AbsoluteDvKey(table_store, dv));
    }
    ARROW_ASSIGN_OR_RAISE(rows, ReadDvFile(table_store, key, dv));
  } else {
    return CorruptDv(dv, "unknown storageType '", dv.storage_type,
                     "' (expected 'u', 'i' or 'p')");
  }
  ARROW_RETURN_NOT_OK(CheckCardinality(dv, rows));
  return rows;
}

std::optional<std::string> DeletionVectorFileKey(
    const std::optional<DeletionVectorDescriptor>& dv) {
  if (!dv || dv->storage_type != "u") return std::nullopt;
  auto path = UuidDeletionVectorPath(dv->path_or_inline_dv);
  if (!path.ok()) return std::nullopt;
  return *path;
}

}  // namespace ampdelta::delta
