#include "ampdelta/delta/write/column_plan.h"

#include <algorithm>
#include <string_view>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/compression.h>

namespace ampdelta::delta {
namespace {

constexpr int64_t kCardinalitySampleMinRows = 256;
constexpr int64_t kCardinalitySampleRows = 8192;

void CollectFloatPaths(const arrow::Field& field, const std::string& prefix,
                       std::vector<std::string>* out) {
  const std::string path = prefix.empty() ? field.name() : prefix + "." + field.name();
  const auto& type = *field.type();
  switch (type.id()) {
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
      out->push_back(path);
      break;
    case arrow::Type::STRUCT:
      for (const auto& child : type.fields()) CollectFloatPaths(*child, path, out);
      break;
    case arrow::Type::LIST: {
      // Compliant nested types: <name>.list.element
      const auto element = type.field(0)->WithName("element");
      CollectFloatPaths(*element, path + ".list", out);
      break;
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      CollectFloatPaths(*map.key_field()->WithName("key"), path + ".key_value", out);
      CollectFloatPaths(*map.item_field()->WithName("value"), path + ".key_value", out);
      break;
    }
    default:
      break;
  }
}

std::vector<std::string> FloatColumnPaths(const arrow::Schema& schema) {
  std::vector<std::string> out;
  for (const auto& field : schema.fields()) CollectFloatPaths(*field, "", &out);
  return out;
}

// The value bytes of a binary-like column's first `rows` rows (empty for other types).
std::string_view ValueBytes(const arrow::Array& column, int64_t rows) {
  const auto& data = *column.data();
  if (column.type_id() == arrow::Type::BINARY ||
      column.type_id() == arrow::Type::STRING) {
    const auto* offsets = data.GetValues<int32_t>(1);
    const auto* values = data.buffers[2] ? data.buffers[2]->data() : nullptr;
    if (values == nullptr) return {};
    return std::string_view(reinterpret_cast<const char*>(values) + offsets[0],
                            static_cast<size_t>(offsets[rows] - offsets[0]));
  }
  if (column.type_id() == arrow::Type::FIXED_SIZE_BINARY) {
    const int width = column.type()->byte_width();
    return std::string_view(
        reinterpret_cast<const char*>(data.buffers[1]->data()) + data.offset * width,
        static_cast<size_t>(rows * width));
  }
  return {};
}

}  // namespace

parquet::Compression::type ToParquetCompression(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return parquet::Compression::UNCOMPRESSED;
    case Codec::kSnappy:
      return parquet::Compression::SNAPPY;
    case Codec::kGzip:
      return parquet::Compression::GZIP;
    case Codec::kZstd:
      return parquet::Compression::ZSTD;
    case Codec::kLz4:
      return parquet::Compression::LZ4;
    case Codec::kBrotli:
      return parquet::Compression::BROTLI;
  }
  return parquet::Compression::ZSTD;
}

arrow::Result<ColumnPlan> PlanColumns(const arrow::RecordBatch& sample,
                                      const DataFileOptions& options) {
  ColumnPlan plan;
  if (!options.dictionary || sample.num_rows() < kCardinalitySampleMinRows) return plan;
  const int64_t rows = std::min<int64_t>(sample.num_rows(), kCardinalitySampleRows);
  std::unique_ptr<arrow::util::Codec> codec;
  if (options.codec != Codec::kUncompressed) {
    ARROW_ASSIGN_OR_RAISE(
        codec, arrow::util::Codec::Create(ToParquetCompression(options.codec)));
  }
  for (int i = 0; i < sample.num_columns(); ++i) {
    const auto& column = sample.column(i);
    if (column->type()->num_fields() > 0 || column->type_id() == arrow::Type::BOOL)
      continue;
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum distinct,
        arrow::compute::CallFunction("count_distinct", {column->Slice(0, rows)}));
    const int64_t count =
        static_cast<const arrow::Int64Scalar&>(*distinct.scalar()).value;
    if (count * 2 <= rows) continue;
    const std::string& name = sample.schema()->field(i)->name();
    plan.plain.push_back(name);
    const std::string_view bytes = ValueBytes(*column->Slice(0, rows), rows);
    if (codec == nullptr || bytes.size() < 4096) continue;
    std::vector<uint8_t> out(static_cast<size_t>(
        codec->MaxCompressedLen(static_cast<int64_t>(bytes.size()),
                                reinterpret_cast<const uint8_t*>(bytes.data()))));
    ARROW_ASSIGN_OR_RAISE(int64_t compressed,
                          codec->Compress(static_cast<int64_t>(bytes.size()),
                                          reinterpret_cast<const uint8_t*>(bytes.data()),
                                          static_cast<int64_t>(out.size()), out.data()));
    if (compressed * 10 > static_cast<int64_t>(bytes.size()) * 9)
      plan.uncompressed.push_back(name);
  }
  return plan;
}

std::shared_ptr<parquet::WriterProperties> MakeWriterProperties(
    const ColumnPlan& plan, const DataFileOptions& options,
    const arrow::Schema& data_schema) {
  parquet::WriterProperties::Builder builder;
  builder.compression(ToParquetCompression(options.codec));
  if (options.compression_level) builder.compression_level(*options.compression_level);
  for (const auto& column : plan.uncompressed) {
    builder.compression(column, parquet::Compression::UNCOMPRESSED);
  }
  builder.max_row_group_length(std::max<int64_t>(1, options.max_rows_per_group));
  if (options.dictionary) {
    builder.enable_dictionary();
    for (const auto& column : plan.plain) builder.disable_dictionary(column);
  } else {
    builder.disable_dictionary();
  }
  if (options.parquet_statistics) {
    builder.enable_statistics();
    builder.enable_write_page_index();
    // Parquet min/max leave NaN out, so engines that sort NaN above +Infinity (Spark,
    // DuckDB) would skip row groups holding NaN: no Parquet statistics for floats.
    for (const auto& path : FloatColumnPaths(data_schema))
      builder.disable_statistics(path);
    // Min/max of mostly-distinct binary columns (hashes, signatures) prune nothing:
    // their values are spread uniformly, and comparing them costs ~5% of a write.
    for (const auto& column : plan.plain) {
      auto field = data_schema.GetFieldByName(column);
      if (field != nullptr && arrow::is_binary_like(field->type()->id())) {
        builder.disable_statistics(column);
      }
    }
  } else {
    builder.disable_statistics();
  }
  builder.created_by("ampdelta");
  return builder.build();
}

}  // namespace ampdelta::delta
