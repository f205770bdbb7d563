#include "table_format.h"

#include <algorithm>
#include <ctime>
#include <sstream>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/util/hex.h"
#include "ampdelta/util/time_format.h"

namespace ampdelta::cli {
namespace {

std::string FormatTimestamp(int64_t value, const arrow::TimestampType& type) {
  const int64_t per_second = UnitsPerSecond(type.unit());
  int64_t seconds = 0;
  int64_t fraction = 0;
  SplitEpoch(value, per_second, &seconds, &fraction);
  std::string out = FormatCivil(seconds, CivilFormat::kDateTime);
  if (fraction != 0) {
    std::string digits = std::to_string(fraction);
    const size_t width = std::to_string(per_second).size() - 1;
    out += "." + std::string(width - digits.size(), '0') + digits;
  }
  return out + (type.timezone().empty() ? "" : " UTC");
}

// Display width of UTF-8 text: count code points, not bytes.
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string Pad(const std::string& text, size_t width) {
  return text + std::string(width - std::min(width, DisplayWidth(text)), ' ');
}

std::string Repeat(const std::string& piece, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += piece;
  return out;
}

}  // namespace

std::string FormatValue(const arrow::Array& array, int64_t index) {
  if (array.IsNull(index)) return "null";
  switch (array.type_id()) {
    case arrow::Type::FIXED_SIZE_BINARY: {
      const auto& typed = static_cast<const arrow::FixedSizeBinaryArray&>(array);
      return ToHex0x(typed.GetView(index));
    }
    case arrow::Type::BINARY: {
      const auto& typed = static_cast<const arrow::BinaryArray&>(array);
      return ToHex0x(typed.GetView(index));
    }
    case arrow::Type::LARGE_BINARY: {
      const auto& typed = static_cast<const arrow::LargeBinaryArray&>(array);
      return ToHex0x(typed.GetView(index));
    }
    case arrow::Type::TIMESTAMP: {
      const auto& typed = static_cast<const arrow::TimestampArray&>(array);
      return FormatTimestamp(typed.Value(index),
                             static_cast<const arrow::TimestampType&>(*array.type()));
    }
    case arrow::Type::STRUCT: {
      // Fields formatted as columns are (hex bytes, not raw ones), as Polars shows them.
      const auto& record = static_cast<const arrow::StructArray&>(array);
      std::string out = "{";
      for (int i = 0; i < record.num_fields(); ++i) {
        if (i > 0) out += ",";
        out += FormatValue(*record.field(i), index);
      }
      return out + "}";
    }
    case arrow::Type::LIST: {
      const auto& list = static_cast<const arrow::ListArray&>(array);
      std::string out = "[";
      for (int32_t i = 0; i < list.value_length(index); ++i) {
        if (i > 0) out += ", ";
        out += FormatValue(*list.values(), list.value_offset(index) + i);
      }
      return out + "]";
    }
    default: {
      auto scalar = array.GetScalar(index);
      if (!scalar.ok()) return "?";
      return (*scalar)->ToString();
    }
  }
}

std::string FormatType(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::UINT8:
      return "u8";
    case arrow::Type::UINT16:
      return "u16";
    case arrow::Type::UINT32:
      return "u32";
    case arrow::Type::UINT64:
      return "u64";
    case arrow::Type::INT8:
      return "i8";
    case arrow::Type::INT16:
      return "i16";
    case arrow::Type::INT32:
      return "i32";
    case arrow::Type::INT64:
      return "i64";
    case arrow::Type::FLOAT:
      return "f32";
    case arrow::Type::DOUBLE:
      return "f64";
    case arrow::Type::BOOL:
      return "bool";
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
      return "str";
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::FIXED_SIZE_BINARY:
      return "binary";
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      static const char* kUnits[] = {"s", "ms", "μs", "ns"};
      std::string out = std::string("datetime[") + kUnits[static_cast<int>(ts.unit())];
      if (!ts.timezone().empty()) {
        out += ", ";
        out += ts.timezone() == "+00:00" ? "UTC" : ts.timezone();
      }
      return out + "]";
    }
    case arrow::Type::STRUCT:
      return "struct[" + std::to_string(type.num_fields()) + "]";
    case arrow::Type::LIST:
      return "list[" + FormatType(*type.field(0)->type()) + "]";
    default:
      return type.ToString();
  }
}

std::string CsvQuote(const std::string& text) {
  if (!text.empty() && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvField(const arrow::Array& array, int64_t index) {
  if (array.IsNull(index)) return "";
  return CsvQuote(FormatValue(array, index));
}

std::string CsvHeader(const arrow::Schema& schema) {
  std::string out;
  for (int c = 0; c < schema.num_fields(); ++c) {
    if (c > 0) out += ',';
    out += CsvQuote(schema.field(c)->name());
  }
  return out + kCsvLineEnd;
}

std::string CsvRecords(const arrow::RecordBatch& batch) {
  std::string out;
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    for (int c = 0; c < batch.num_columns(); ++c) {
      if (c > 0) out += ',';
      out += CsvField(*batch.column(c), i);
    }
    out += kCsvLineEnd;
  }
  return out;
}

std::vector<std::vector<std::string>> FormatRows(const arrow::RecordBatch& batch,
                                                 const std::vector<int64_t>& indices) {
  std::vector<std::vector<std::string>> rows;
  for (int64_t index : indices) {
    std::vector<std::string> row;
    for (int c = 0; c < batch.num_columns(); ++c) {
      row.push_back(FormatValue(*batch.column(c), index));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string FormatTable(const std::shared_ptr<arrow::Schema>& schema,
                        const std::vector<std::vector<std::string>>& rows) {
  const int columns = schema->num_fields();
  std::vector<std::string> names;
  std::vector<std::string> types;
  std::vector<size_t> widths;
  for (int c = 0; c < columns; ++c) {
    names.push_back(schema->field(c)->name());
    types.push_back(FormatType(*schema->field(c)->type()));
    size_t width =
        std::max({DisplayWidth(names.back()), DisplayWidth(types.back()), size_t{3}});
    for (const auto& row : rows) width = std::max(width, DisplayWidth(row[c]));
    widths.push_back(width);
  }
  auto rule = [&](const char* left, const char* fill, const char* join,
                  const char* right) {
    std::string line = left;
    for (int c = 0; c < columns; ++c) {
      line += Repeat(fill, widths[c] + 2);
      line += c + 1 < columns ? join : right;
    }
    return line + "\n";
  };
  auto cells = [&](const std::vector<std::string>& values) {
    std::string line = "│";
    for (int c = 0; c < columns; ++c) {
      line += " " + Pad(values[c], widths[c]) + " ";
      line += c + 1 < columns ? "┆" : "│";
    }
    return line + "\n";
  };
  std::ostringstream out;
  out << "shape: (" << rows.size() << ", " << columns << ")\n";
  out << rule("┌", "─", "┬", "┐");
  out << cells(names);
  out << cells(std::vector<std::string>(columns, "---"));
  out << cells(types);
  out << rule("╞", "═", "╪", "╡");
  for (const auto& row : rows) out << cells(row);
  out << rule("└", "─", "┴", "┘");
  return out.str();
}

}  // namespace ampdelta::cli
