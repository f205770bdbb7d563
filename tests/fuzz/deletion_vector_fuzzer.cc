// libFuzzer target: deletion vectors. The input is tried as a serialized bitmap, as Z85
// text, and as the descriptor-plus-file of an inline, UUID-named or absolute-path DV.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <arrow/buffer.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;
namespace storage = ampdelta::storage;

namespace {

// Look at a decoded set without materialising it (a few bytes can describe 2^32 rows).
void Probe(const delta::DeletedRows& rows) {
  (void)rows.cardinality();
  (void)rows.Contains(0);
  (void)rows.Contains(UINT64_MAX);
  (void)rows.KeepMask(0, 64);
  (void)rows.KeepMask(INT64_MAX - 10, 10);
  (void)rows.KeepMask(-1, 1);
  if (rows.cardinality() <= 4096) {
    const auto listed = rows.ToVector();
    AMPDELTA_FUZZ_CHECK(static_cast<int64_t>(listed.size()) == rows.cardinality(),
                        "a DV lists as many rows as its cardinality");
    for (uint64_t row : listed)
      AMPDELTA_FUZZ_CHECK(rows.Contains(row), "listed rows are in");
  }
}

uint32_t Read32(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  if (bytes.size() >= at + 4) std::memcpy(&value, bytes.data() + at, 4);
  return value;
}

uint32_t ReadBigEndian32(std::string_view bytes, size_t at) {
  if (bytes.size() < at + 4) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + at);
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = ampdelta::fuzz::AsText(data, size);

  if (auto rows = delta::ParseRoaring64Portable(bytes); rows.ok()) Probe(*rows);

  if (auto decoded = delta::DecodeZ85(bytes); decoded.ok()) {
    auto encoded = delta::EncodeZ85(*decoded);
    AMPDELTA_FUZZ_CHECK(encoded.ok() && *encoded == bytes,
                        "Z85 text survives decode and encode");
  }
  (void)delta::UuidDeletionVectorPath(bytes);

  // A descriptor from the first 9 bytes (storage type, offset, cardinality), the rest
  // the DV: inline as Z85, or as the body of the file a `u` or `p` descriptor names.
  if (size < 9) return 0;
  const std::string_view body = bytes.substr(9);
  delta::DeletionVectorDescriptor dv;
  static constexpr const char* kTypes[] = {"i", "u", "p", "x"};
  dv.storage_type = kTypes[data[0] % 4];
  const uint32_t offset = Read32(bytes, 1);
  if ((offset & 0x80000000u) == 0) dv.offset = static_cast<int32_t>(offset % 64);
  dv.cardinality = static_cast<int32_t>(Read32(bytes, 5));
  dv.size_in_bytes = static_cast<int32_t>(body.size());

  storage::MemoryStore store;
  if (dv.storage_type == "i") {
    std::string padded(body);
    padded.resize((padded.size() + 3) / 4 * 4, '\0');
    auto text = delta::EncodeZ85(padded);
    if (!text.ok()) return 0;
    dv.path_or_inline_dv = *text;
  } else {
    // The file: a version byte, then at the offset a length, the bitmap and its CRC as
    // the fuzzer wrote them.
    dv.path_or_inline_dv = dv.storage_type == "u" ? "ab0123456789012345678901"
                                                  : store.root_uri() + "/dv/file.bin";
    auto key = dv.storage_type == "u"
                   ? delta::UuidDeletionVectorPath(dv.path_or_inline_dv)
                   : arrow::Result<std::string>("dv/file.bin");
    if (!key.ok()) return 0;
    auto file = std::make_shared<arrow::Buffer>(data + 9, static_cast<int64_t>(size - 9));
    if (!store.Put(*key, file, storage::PutMode::kOverwrite).ok()) return 0;
    // The descriptor agrees with the file's length field, so the checks after it run.
    dv.size_in_bytes = static_cast<int32_t>(
        ReadBigEndian32(body, static_cast<size_t>(dv.offset.value_or(1))));
  }
  if (auto rows = delta::LoadDeletionVector(store, dv); rows.ok()) {
    AMPDELTA_FUZZ_CHECK(rows->cardinality() == dv.cardinality,
                        "a loaded DV has the descriptor's cardinality");
    Probe(*rows);
  }
  (void)dv.UniqueId();
  return 0;
}
