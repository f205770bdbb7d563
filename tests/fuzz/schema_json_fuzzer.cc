// libFuzzer target: a Delta schemaString through SchemaFromJson, and the schema it
// yields back through SchemaToJson and the table-type mapping.

#include <cstdint>
#include <string>

#include <arrow/type.h>

#include "ampdelta/delta/log/delta_types.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/log/schema_json.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto schema = delta::SchemaFromJson(ampdelta::fuzz::AsText(data, size));
  if (!schema.ok()) return 0;
  for (const auto& field : (*schema)->fields()) {
    (void)delta::DeltaTypeName(*field->type());
    (void)delta::PhysicalName(*field);
  }
  (void)delta::NeedsTimestampNtz(**schema);
  (void)delta::ToTableSchema(**schema);

  // Every schema read from JSON has a Delta form with the same columns, and writing it is
  // a fixed point. (Field metadata compares through the text: SchemaToJson leaves out the
  // `ARROW:` and `PARQUET:` keys, which are Arrow's own annotations.)
  auto text = delta::SchemaToJson(**schema);
  AMPDELTA_FUZZ_CHECK(text.ok(), "a parsed schema encodes");
  auto again = delta::SchemaFromJson(*text);
  AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded schema parses");
  AMPDELTA_FUZZ_CHECK((*again)->Equals(**schema, /*check_metadata=*/false),
                      "a schema keeps its columns through encode and parse");
  auto text_again = delta::SchemaToJson(**again);
  AMPDELTA_FUZZ_CHECK(text_again.ok() && *text_again == *text,
                      "encoding a schema read back gives the same text");
  return 0;
}
