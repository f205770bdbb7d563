// libFuzzer target: a Delta schemaString through SchemaFromJson, and the schema it
// yields back through SchemaToJson and the table-type mapping.

#include <cstdint>
#include <string>

#include <arrow/type.h>

#include "ampdelta/delta/schema.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ampdelta::fuzz::Initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto schema = delta::SchemaFromJson(ampdelta::fuzz::AsText(data, size));
  if (!schema.ok()) return 0;
  for (const auto& field : (*schema)->fields()) {
    (void)delta::DeltaTypeName(*field->type());
    (void)delta::PhysicalName(*field);
  }
  (void)delta::NeedsTimestampNtz(**schema);
  (void)delta::ToTableSchema(**schema);

  // Every schema read from JSON has a Delta form, and that form reads back the same.
  auto text = delta::SchemaToJson(**schema);
  AMPDELTA_FUZZ_CHECK(text.ok(), "a parsed schema encodes");
  auto again = delta::SchemaFromJson(*text);
  AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded schema parses");
  AMPDELTA_FUZZ_CHECK((*again)->Equals(**schema, /*check_metadata=*/true),
                      "a schema survives encode and parse");
  return 0;
}
