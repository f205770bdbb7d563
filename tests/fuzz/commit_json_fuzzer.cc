// libFuzzer target: a commit file (newline-delimited JSON actions) through the action
// parser, and what it parsed back through the encoder and the parser.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <arrow/buffer.h>

#include "ampdelta/delta/log/action_json.h"
#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/protocol_support.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/storage/memory_store.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;

namespace {

// Replay the commit as version 0 of a table, and look at what the snapshot derives.
void Replay(const std::string& commit) {
  auto store = std::make_shared<ampdelta::storage::MemoryStore>();
  if (!store
           ->Put(delta::CommitPath(0), arrow::Buffer::FromString(commit),
                 ampdelta::storage::PutMode::kCreateIfAbsent)
           .ok()) {
    return;
  }
  auto snapshot = delta::Snapshot::Load(store);
  if (!snapshot.ok()) return;
  (void)(*snapshot)->SumFileSizes();
  (void)(*snapshot)->CountLiveRecords();
  for (const auto& file : (*snapshot)->files()) (void)(*snapshot)->FileKey(file.path);
  (void)delta::ReadHistory(*store, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ampdelta::fuzz::AsText(data, size);
  (void)delta::ParseActionLine(text);
  auto actions = delta::ParseCommit(text, "fuzz");
  // Lines of unknown actions only parse to nothing, which encodes as an empty file: not a
  // commit (ParseCommit calls it a write cut short).
  if (!actions.ok() || actions->empty()) return 0;

  // Parsed strings are UTF-8 (the JSON parser checks), so encoding cannot fail, and the
  // encoded commit must parse back to the same actions: nothing read is lost on rewrite.
  auto encoded = delta::EncodeCommit(*actions);
  AMPDELTA_FUZZ_CHECK(encoded.ok(), "a parsed commit encodes");
  auto again = delta::ParseCommit(*encoded, "fuzz");
  AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded commit parses");
  AMPDELTA_FUZZ_CHECK(*again == *actions, "a commit survives encode and parse");
  Replay(std::string(text));

  // What replay does next with the table-level actions.
  const delta::Protocol* protocol = nullptr;
  const delta::Metadata* metadata = nullptr;
  for (const auto& action : *actions) {
    if (const auto* p = std::get_if<delta::Protocol>(&action)) protocol = p;
    if (const auto* m = std::get_if<delta::Metadata>(&action)) metadata = m;
    if (const auto* add = std::get_if<delta::Add>(&action)) {
      if (add->deletion_vector) (void)add->deletion_vector->UniqueId();
    }
  }
  if (protocol != nullptr) {
    (void)delta::CheckReadSupported(*protocol);
    (void)delta::ImpliedWriterFeatures(*protocol);
  }
  if (metadata != nullptr) {
    (void)delta::ParseTableProperties(metadata->configuration);
    auto schema = delta::SchemaFromJson(metadata->schema_string);
    if (schema.ok() && protocol != nullptr) {
      (void)delta::CheckWriteSupported(*protocol, *metadata, **schema);
    }
  }
  return 0;
}
