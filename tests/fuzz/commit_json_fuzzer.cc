// libFuzzer target: a commit file (newline-delimited JSON actions) through the action
// parser, and what it parsed back through the encoder and the parser.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ampdelta/delta/action_json.h"
#include "ampdelta/delta/actions.h"
#include "ampdelta/delta/schema.h"
#include "ampdelta/delta/table_features.h"
#include "ampdelta/delta/table_properties.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ampdelta::fuzz::Initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ampdelta::fuzz::AsText(data, size);
  (void)delta::ParseActionLine(text);
  auto actions = delta::ParseCommit(text, "fuzz");
  if (!actions.ok()) return 0;

  // Parsed strings are UTF-8 (the JSON parser checks), so encoding cannot fail, and the
  // encoded commit must parse back to the same actions: nothing read is lost on rewrite.
  auto encoded = delta::EncodeCommit(*actions);
  AMPDELTA_FUZZ_CHECK(encoded.ok(), "a parsed commit encodes");
  auto again = delta::ParseCommit(*encoded, "fuzz");
  AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded commit parses");
  AMPDELTA_FUZZ_CHECK(*again == *actions, "a commit survives encode and parse");

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
