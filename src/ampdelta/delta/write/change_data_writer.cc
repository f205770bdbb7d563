#include "ampdelta/delta/write/change_data_writer.h"

#include <utility>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/row_tracking.h"
#include "ampdelta/delta/log/schema.h"

namespace ampdelta::delta {

const char* ChangeTypeName(ChangeType type) {
  switch (type) {
    case ChangeType::kInsert:
      return "insert";
    case ChangeType::kDelete:
      return "delete";
    case ChangeType::kUpdatePreimage:
      return "update_preimage";
    case ChangeType::kUpdatePostimage:
      return "update_postimage";
  }
  return "delete";
}

ChangeDataWriter::ChangeDataWriter(std::shared_ptr<arrow::Schema> table_schema,
                                   std::shared_ptr<arrow::Schema> file_schema,
                                   std::unique_ptr<DataFileWriter> files)
    : table_schema_(std::move(table_schema)),
      file_schema_(std::move(file_schema)),
      files_(std::move(files)) {}

ChangeDataWriter::~ChangeDataWriter() = default;

arrow::Result<std::unique_ptr<ChangeDataWriter>> ChangeDataWriter::Make(
    std::shared_ptr<storage::ObjectStore> store,
    std::shared_ptr<arrow::Schema> table_schema,
    std::vector<std::string> partition_columns, DataFileOptions options) {
  ARROW_ASSIGN_OR_RAISE(
      auto file_schema,
      table_schema->AddField(table_schema->num_fields(),
                             arrow::field(kChangeTypeColumn, arrow::utf8(), false)));
  options.directory = kChangeDataFolder;
  options.file_prefix = "cdc";
  options.prepare = nullptr;
  std::vector<std::string> row_tracking_columns = std::move(options.row_tracking_columns);
  options.row_tracking_columns.clear();
  // Change data is read whole by change feed readers: no statistics to skip by.
  options.stats.num_indexed_cols = 0;
  options.stats.stats_columns.reset();
  ARROW_ASSIGN_OR_RAISE(
      auto files, DataFileWriter::Make(std::move(store), file_schema,
                                       std::move(partition_columns), std::move(options)));
  auto writer = std::unique_ptr<ChangeDataWriter>(new ChangeDataWriter(
      std::move(table_schema), std::move(file_schema), std::move(files)));
  writer->row_tracking_columns_ = std::move(row_tracking_columns);
  return writer;
}

arrow::Status ChangeDataWriter::Write(const std::shared_ptr<arrow::RecordBatch>& rows,
                                      ChangeType type) {
  if (rows->num_rows() == 0) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(auto table_rows, WithoutColumns(rows, row_tracking_columns_));
  ARROW_ASSIGN_OR_RAISE(auto conformed, ConformBatch(table_rows, table_schema_));
  ARROW_ASSIGN_OR_RAISE(
      auto change, arrow::MakeArrayFromScalar(arrow::StringScalar(ChangeTypeName(type)),
                                              conformed->num_rows()));
  std::vector<std::shared_ptr<arrow::Array>> columns = conformed->columns();
  columns.push_back(std::move(change));
  return files_->Write(
      arrow::RecordBatch::Make(file_schema_, conformed->num_rows(), std::move(columns)));
}

arrow::Result<std::vector<Cdc>> ChangeDataWriter::Finish() {
  ARROW_ASSIGN_OR_RAISE(auto adds, files_->Finish());
  std::vector<Cdc> out;
  out.reserve(adds.size());
  for (auto& add : adds) {
    Cdc cdc;
    cdc.path = std::move(add.path);
    cdc.partition_values = std::move(add.partition_values);
    cdc.size = add.size;
    cdc.data_change = false;
    out.push_back(std::move(cdc));
  }
  return out;
}

arrow::Status ChangeDataWriter::Abort() { return files_->Abort(); }

int64_t ChangeDataWriter::rows_written() const { return files_->rows_written(); }

}  // namespace ampdelta::delta
