// `ampdelta table write`: Arrow IPC or Parquet files into a table, as one commit.

#include <iostream>
#include <memory>

#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>

#include "ampdelta/delta/log/reader_support.h"
#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/delta/write/table_write_options.h"
#include "ampdelta/delta/write/table_writer.h"
#include "commands.h"
#include "table_actions.h"

namespace ampdelta::cli {
namespace {

// Open an Arrow IPC (file or stream) or Parquet file as a stream of batches, so inputs of
// any size are written with bounded memory.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> OpenInput(
    const std::string& path) {
  // Plain reads, not a memory map: mapped pages would count as this process's memory.
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path));
  // The format by its first bytes: Parquet's `PAR1`, an IPC file's `ARROW1`, an IPC
  // stream's continuation marker (0xFFFFFFFF); anything else is refused by name.
  ARROW_ASSIGN_OR_RAISE(auto head, file->ReadAt(0, 6));
  const std::string magic = head->ToString();
  const bool parquet = magic.rfind("PAR1", 0) == 0;
  if (!parquet && magic != "ARROW1" && magic.rfind("\xff\xff\xff\xff", 0) != 0) {
    return InvalidInputError(
        "--input '", path,
        "' is neither Arrow IPC (file or stream) nor Parquet: it does not "
        "start with ARROW1, an IPC stream's first message or PAR1");
  }
  if (parquet) {
    ARROW_ASSIGN_OR_RAISE(auto reader,
                          parquet::arrow::OpenFile(file, arrow::default_memory_pool()));
    ARROW_ASSIGN_OR_RAISE(auto batches, reader->GetRecordBatchReader());
    // Keep the Parquet reader alive as long as its batch reader.
    struct Owning : arrow::RecordBatchReader {
      std::unique_ptr<parquet::arrow::FileReader> owner;
      std::unique_ptr<arrow::RecordBatchReader> inner;
      std::shared_ptr<arrow::Schema> schema() const override { return inner->schema(); }
      arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
        return inner->ReadNext(batch);
      }
    };
    auto owning = std::make_shared<Owning>();
    owning->owner = std::move(reader);
    owning->inner = std::move(batches);
    return owning;
  }
  auto ipc_file = arrow::ipc::RecordBatchFileReader::Open(file);
  if (ipc_file.ok()) {
    struct FileBatches : arrow::RecordBatchReader {
      std::shared_ptr<arrow::ipc::RecordBatchFileReader> file;
      int next = 0;
      std::shared_ptr<arrow::Schema> schema() const override { return file->schema(); }
      arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
        if (next >= file->num_record_batches()) {
          batch->reset();
          return arrow::Status::OK();
        }
        return file->ReadRecordBatch(next++).Value(batch);
      }
    };
    auto reader = std::make_shared<FileBatches>();
    reader->file = *ipc_file;
    return reader;
  }
  ARROW_RETURN_NOT_OK(file->Seek(0));
  ARROW_ASSIGN_OR_RAISE(auto stream, arrow::ipc::RecordBatchStreamReader::Open(file));
  return stream;
}

// A bad --input file is bad input; Arrow's own errors carry no class.
arrow::Status InputError(const std::string& path, const arrow::Status& status) {
  if (GetErrorDetail(status) != nullptr) return status;
  return InvalidInputError("cannot read --input '", path, "': ", status.message());
}

}  // namespace

arrow::Status Write(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  if (args.inputs.empty()) {
    return InvalidInputError("give at least one --input file");
  }
  ARROW_RETURN_NOT_OK(CheckCompressionLevel(args.compression, args.compression_level));
  std::vector<std::shared_ptr<arrow::RecordBatchReader>> inputs;
  for (const auto& input : args.inputs) {
    auto reader = OpenInput(input);
    if (!reader.ok()) return InputError(input, reader.status());
    inputs.push_back(std::move(*reader));
  }
  delta::TableWriteOptions options;
  ARROW_ASSIGN_OR_RAISE(options.mode, delta::ParseSaveMode(args.mode));
  options.partition_by = args.partition_by;
  options.merge_schema = !args.no_merge_schema;
  ARROW_ASSIGN_OR_RAISE(options.files.codec, delta::ParseCodec(args.compression));
  options.files.compression_level = args.compression_level;
  options.files.target_file_size = args.target_file_size;
  options.files.max_rows_per_file = args.max_rows_per_file;
  options.files.max_rows_per_group = args.max_rows_per_group;
  options.files.dictionary = !args.no_dictionary;
  ARROW_ASSIGN_OR_RAISE(options.configuration, ParsePropertyOptions(args.properties));
  ARROW_ASSIGN_OR_RAISE(options.readers, delta::ParseReaderNames(args.readers));
  if (!args.app_id.empty()) {
    if (!args.app_version) {
      return InvalidInputError("--app-id needs --app-version");
    }
    options.app_transaction =
        delta::SetTransaction{args.app_id, *args.app_version, std::nullopt};
  }
  ARROW_ASSIGN_OR_RAISE(
      auto writer, delta::TableWriter::Open(store, inputs.front()->schema(), options));
  if (args.app_version && writer->read_snapshot()) {
    auto committed = writer->read_snapshot()->AppTransactionVersion(args.app_id);
    if (committed && *committed >= *args.app_version) {
      std::cout << "skipped: app " << args.app_id << " already committed version "
                << *committed << std::endl;
      return arrow::Status::OK();
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& reader = inputs[i];
    std::shared_ptr<arrow::RecordBatch> batch;
    while (true) {
      arrow::Status status = reader->ReadNext(&batch);
      if (!status.ok()) status = InputError(args.inputs[i], status);
      if (status.ok() && batch == nullptr) break;
      if (status.ok()) status = writer->Write(batch);
      if (!status.ok()) {
        (void)writer->Abort();
        return status;
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto result, writer->Commit());
  if (!result.committed) {
    std::cout << "skipped: table exists (mode ignore)" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << result.commit.version << " rows=" << result.rows
            << " files_added=" << result.files_added
            << " files_removed=" << result.files_removed << " bytes=" << result.bytes
            << " attempts=" << result.commit.attempts
            << (result.commit.checkpoint_written ? " checkpoint=written" : "")
            << std::endl;
  return arrow::Status::OK();
}

}  // namespace ampdelta::cli
