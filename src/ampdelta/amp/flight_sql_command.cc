#include "ampdelta/amp/flight_sql_command.h"

#include <cstdint>

namespace ampdelta::amp {
namespace {

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Append a length-delimited field (wire type 2) with the given field number.
void AppendBytesField(uint32_t field_number, std::string_view bytes, std::string* out) {
  AppendVarint((uint64_t{field_number} << 3) | 2, out);
  AppendVarint(bytes.size(), out);
  out->append(bytes);
}

}  // namespace

std::string EncodeStatementQueryCommand(std::string_view sql) {
  std::string statement;
  AppendBytesField(/*query=*/1, sql, &statement);
  std::string any;
  AppendBytesField(/*type_url=*/1, kStatementQueryTypeUrl, &any);
  AppendBytesField(/*value=*/2, statement, &any);
  return any;
}

}  // namespace ampdelta::amp
