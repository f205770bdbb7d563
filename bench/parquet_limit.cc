// The encoder's limit for a load (driven by bench/load_bench.py): how fast Arrow's own
// Parquet writer turns an Arrow stream into Parquet files on local disk when it uses as
// many threads as ampdelta does and the settings that suit the data, with no Delta log,
// no type conversion and no statistics of ours.
//
//   parquet_limit --input stream.arrow --output DIR [--threads 0] [--codec snappy]
//                 [--dictionary auto|all|none|ampdelta]
//
// The input is an Arrow IPC file (memory-mapped, so its pages count towards the peak
// RSS). Each thread takes the next batch from the file and appends it to its own Parquet
// file (1,048,576-row row groups); every file is fsync'ed before it counts as written, as
// a commit requires. `--dictionary auto` turns dictionaries off for binary columns of 20
// bytes or more (hashes, addresses, calldata), where they cost time and rarely shrink
// anything. `--dictionary ampdelta` encodes as ampdelta's writer does (its column plan
// from the first batch: dictionaries kept for columns that repeat, none for
// mostly-distinct ones, incompressible columns stored uncompressed, its statistics and
// page indexes): the same Parquet, so the limit of a load that writes it. Arrow's pool is
// jemalloc, as in the ampdelta tool. Prints one JSON object: rows, files, bytes, seconds,
// cpu_seconds, memory_pool.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <arrow/api.h>
#include <arrow/io/api.h>
#include <arrow/ipc/api.h>
#include <nlohmann/json.hpp>
#include <parquet/arrow/writer.h>
#include <sys/resource.h>

#include "ampdelta/delta/write/column_plan.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "ampdelta/util/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string input;
  std::string output;
  int threads = 0;
  std::string codec = "snappy";
  std::string dictionary = "auto";
};

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

bool IsWideBinary(const arrow::DataType& type) {
  if (type.id() == arrow::Type::FIXED_SIZE_BINARY) {
    return static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width() >= 20;
  }
  return type.id() == arrow::Type::BINARY || type.id() == arrow::Type::LARGE_BINARY;
}

arrow::Result<std::shared_ptr<parquet::WriterProperties>> Properties(
    const Options& options, const arrow::Schema& schema,
    const arrow::RecordBatch& sample) {
  if (options.dictionary == "ampdelta") {
    ampdelta::delta::DataFileOptions files;
    ARROW_ASSIGN_OR_RAISE(files.codec, ampdelta::delta::ParseCodec(options.codec));
    ARROW_ASSIGN_OR_RAISE(auto plan, ampdelta::delta::PlanColumns(sample, files));
    return ampdelta::delta::MakeWriterProperties(plan, files, schema);
  }
  ARROW_ASSIGN_OR_RAISE(auto codec,
                        arrow::util::Codec::GetCompressionType(options.codec));
  parquet::WriterProperties::Builder builder;
  builder.compression(codec)->max_row_group_length(1'048'576);
  if (options.dictionary == "none") {
    builder.disable_dictionary();
  } else if (options.dictionary == "auto") {
    for (const auto& field : schema.fields()) {
      if (IsWideBinary(*field->type())) builder.disable_dictionary(field->name());
    }
  } else if (options.dictionary != "all") {
    return arrow::Status::Invalid(
        "--dictionary must be auto, all, none or ampdelta, got '", options.dictionary,
        "'");
  }
  return builder.build();
}

arrow::Status Sync(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return arrow::Status::IOError("cannot open ", path, " to fsync it");
  const int rc = fsync(fd);
  close(fd);
  if (rc != 0) return arrow::Status::IOError("fsync of ", path, " failed");
  return arrow::Status::OK();
}

struct Totals {
  std::atomic<int64_t> rows{0};
  std::atomic<int64_t> bytes{0};
};

arrow::Status WriteFile(const std::string& path, const arrow::Schema& schema,
                        const arrow::RecordBatchVector& batches,
                        std::atomic<size_t>* next_batch,
                        std::shared_ptr<parquet::WriterProperties> properties,
                        Totals* totals) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::FileOutputStream::Open(path));
  ARROW_ASSIGN_OR_RAISE(
      auto writer, parquet::arrow::FileWriter::Open(schema, arrow::default_memory_pool(),
                                                    sink, std::move(properties)));
  int64_t rows = 0;
  for (size_t i = next_batch->fetch_add(1); i < batches.size();
       i = next_batch->fetch_add(1)) {
    ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batches[i]));
    rows += batches[i]->num_rows();
  }
  ARROW_RETURN_NOT_OK(writer->Close());
  ARROW_ASSIGN_OR_RAISE(const int64_t bytes, sink->Tell());
  ARROW_RETURN_NOT_OK(sink->Close());
  ARROW_RETURN_NOT_OK(Sync(path));
  totals->rows += rows;
  totals->bytes += bytes;
  return arrow::Status::OK();
}

arrow::Status Run(const Options& options, nlohmann::json* out) {
  ARROW_RETURN_NOT_OK(ampdelta::InitializeRuntime());
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::MemoryMappedFile::Open(
                                       options.input, arrow::io::FileMode::READ));
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchFileReader::Open(file));
  const int threads = options.threads > 0 ? options.threads : ampdelta::UsableCores();

  // The reader is not meant for concurrent use: the batches (zero-copy views of the
  // mapping) are read before the clock starts.
  arrow::RecordBatchVector batches;
  for (int i = 0; i < reader->num_record_batches(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto batch, reader->ReadRecordBatch(i));
    batches.push_back(std::move(batch));
  }
  if (batches.empty()) return arrow::Status::Invalid("no batches in ", options.input);
  ARROW_ASSIGN_OR_RAISE(auto properties,
                        Properties(options, *reader->schema(), *batches.front()));
  const double cpu_start = CpuSeconds();
  const auto start = Clock::now();
  std::atomic<size_t> next_batch{0};
  Totals totals;
  std::vector<arrow::Status> results(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      results[static_cast<size_t>(t)] =
          WriteFile(options.output + "/part-" + std::to_string(t) + ".parquet",
                    *reader->schema(), batches, &next_batch, properties, &totals);
    });
  }
  for (auto& worker : workers) worker.join();
  for (const auto& status : results) ARROW_RETURN_NOT_OK(status);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  *out = {{"rows", totals.rows.load()},
          {"files", threads},
          {"bytes", totals.bytes.load()},
          {"threads", threads},
          {"codec", options.codec},
          {"dictionary", options.dictionary},
          {"seconds", seconds},
          {"cpu_seconds", CpuSeconds() - cpu_start},
          {"memory_pool", arrow::default_memory_pool()->backend_name()}};
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  ampdelta::SelectDefaultMemoryPool();  // as the ampdelta tool does
  CLI::App app{"Arrow's Parquet writer on an Arrow IPC file: the encoder's limit"};
  Options options;
  app.add_option("--input", options.input, "Arrow IPC file")->required();
  app.add_option("--output", options.output, "existing directory for the files")
      ->required();
  app.add_option("--threads", options.threads, "files written at once (0: one per core)");
  app.add_option("--codec", options.codec, "Parquet codec");
  app.add_option("--dictionary", options.dictionary, "auto, all, none or ampdelta");
  CLI11_PARSE(app, argc, argv);
  nlohmann::json out;
  if (const auto status = Run(options, &out); !status.ok()) {
    std::cerr << "parquet_limit: " << status.ToString() << "\n";
    return 1;
  }
  std::cout << out.dump() << "\n";
  return 0;
}
