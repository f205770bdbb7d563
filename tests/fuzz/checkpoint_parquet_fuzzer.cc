// libFuzzer target: bytes read as a Parquet checkpoint, classic and as a V2 checkpoint
// whose sidecar is the same file, and the actions read back through the commit encoder.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include <arrow/buffer.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/checkpoint_reader.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;
namespace storage = ampdelta::storage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  storage::MemoryStore store;
  const std::string path = delta::CheckpointPath(1);
  auto bytes = std::make_shared<arrow::Buffer>(data, static_cast<int64_t>(size));
  if (!store.Put(path, bytes, storage::PutMode::kOverwrite).ok()) return 0;
  // A sidecar action that names the file itself must not loop: sidecars are read once.
  if (!store
           .Put(std::string(delta::kLogDir) + "/_sidecars/self.parquet", bytes,
                storage::PutMode::kOverwrite)
           .ok()) {
    return 0;
  }

  auto actions = delta::ReadParquetActions(store, path);
  if (!actions.ok()) return 0;
  // Sidecars are followed by ReadCheckpoint only: read the file that way when it has any
  // (reading it twice otherwise would only halve the fuzzer's speed).
  const bool has_sidecar = std::any_of(
      actions->begin(), actions->end(),
      [](const auto& a) { return std::holds_alternative<delta::Sidecar>(a); });
  if (has_sidecar) {
    delta::CheckpointFiles checkpoint;
    checkpoint.version = 1;
    if (auto parsed = delta::ParseLogPath(path)) checkpoint.files.push_back(*parsed);
    (void)delta::ReadCheckpoint(store, checkpoint);
  }

  // Parquet strings need not be UTF-8: encoding may refuse them, but must not throw. When
  // it succeeds, the commit parser must read the same actions back.
  if (actions->empty()) return 0;  // would encode as an empty file, which is no commit
  auto encoded = delta::EncodeCommit(*actions);
  if (!encoded.ok()) return 0;
  auto again = delta::ParseCommit(*encoded, "fuzz");
  AMPDELTA_FUZZ_CHECK(again.ok(), "checkpoint actions re-encoded as a commit parse");
  AMPDELTA_FUZZ_CHECK(*again == *actions, "checkpoint actions survive encode and parse");
  return 0;
}
