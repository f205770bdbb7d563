#include "ampdelta/loader/backfill/block_replacement.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include <arrow/compute/api.h>
#include <arrow/io/file.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/scalar.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/loader/batch/recorded_load.h"
#include "ampdelta/loader/common/load_common.h"
#include "ampdelta/loader/state/takeover.h"
#include "ampdelta/util/backoff.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

// Each conflict means another partition committed meanwhile; with N workers a partition
// loses at most N-1 times in a row unless a compaction keeps winning.
constexpr int kAttempts = 16;

// Every row's block lies in the span: a row outside it (or without a block) would not be
// replaced when the load runs again, and would be loaded twice.
arrow::Status CheckBlocksInSpan(const arrow::RecordBatch& batch,
                                const std::string& column, BlockSpan blocks) {
  const int index = delta::FindFieldIgnoreCase(*batch.schema(), column);
  if (index < 0) {
    return InvalidInputError("the rows have no block column '", column,
                             "' to replace blocks ", blocks.first, "..", blocks.last,
                             " by");
  }
  const auto& values = batch.column(index);
  if (values->null_count() > 0) {
    return InvalidInputError("a row has no '", column, "': rows that replace blocks ",
                             blocks.first, "..", blocks.last,
                             " must each name their block");
  }
  ARROW_ASSIGN_OR_RAISE(auto as_unsigned, arrow::compute::Cast(*values, arrow::uint64()));
  ARROW_ASSIGN_OR_RAISE(auto minmax, arrow::compute::MinMax(*as_unsigned));
  const auto& pair = minmax.scalar_as<arrow::StructScalar>();
  if (!pair.value[0]->is_valid) return arrow::Status::OK();  // no rows
  const uint64_t low = static_cast<const arrow::UInt64Scalar&>(*pair.value[0]).value;
  const uint64_t high = static_cast<const arrow::UInt64Scalar&>(*pair.value[1]).value;
  if (low < blocks.first || high > blocks.last) {
    return InvalidInputError("rows of blocks ", low, "..", high,
                             " lie outside the blocks they replace, ", blocks.first, "..",
                             blocks.last);
  }
  return arrow::Status::OK();
}

// A name no other spool of this machine has now: the process, a counter, the clock.
std::string SpoolName() {
  static std::atomic<uint64_t> counter{0};
  return "ampdelta-replace-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
         ".arrows";
}

/// The partition's rows in an Arrow IPC stream file of the local temporary folder
/// (TMPDIR), removed with this object.
class Spool {
 public:
  static arrow::Result<std::unique_ptr<Spool>> Write(
      const std::shared_ptr<arrow::RecordBatchReader>& reader, const LoadOptions& options,
      BlockSpan blocks) {
    std::error_code error;
    const auto folder = std::filesystem::temp_directory_path(error);
    if (error) return arrow::Status::IOError("no temporary folder: ", error.message());
    auto spool = std::unique_ptr<Spool>(new Spool(folder / SpoolName()));
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::FileOutputStream::Open(spool->path_));
    ARROW_ASSIGN_OR_RAISE(auto writer,
                          arrow::ipc::MakeStreamWriter(file, reader->schema()));
    while (true) {
      if (options.stop != nullptr && options.stop->load()) {
        return arrow::Status::Cancelled("stopped before the load committed anything");
      }
      ARROW_ASSIGN_OR_RAISE(auto batch, reader->Next());
      if (batch == nullptr) break;
      ARROW_RETURN_NOT_OK(CheckBlocksInSpan(*batch, options.block_column, blocks));
      ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
    }
    ARROW_RETURN_NOT_OK(writer->Close());
    ARROW_RETURN_NOT_OK(file->Close());
    return spool;
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Open() const {
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path_.string()));
    return arrow::ipc::RecordBatchStreamReader::Open(file);
  }

  ~Spool() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }

 private:
  explicit Spool(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// The removal of the replaced rows, planned on the table the commit is written against.
internal::LoadRecords Replacing(const std::string& column, BlockSpan blocks) {
  internal::LoadRecords records;
  records.before_commit = [column, blocks](int64_t, delta::TableWriter* writer) {
    const auto& snapshot = writer->read_snapshot();
    if (snapshot == nullptr) return arrow::Status::OK();  // a new table
    return StageForeignUndo(*snapshot, column, blocks.first, writer, blocks.last)
        .status();
  };
  return records;
}

LoadResult Refused(const DeltaLakeConfig& config, const LoadOptions& options,
                   arrow::Status status) {
  return internal::RunLoad(config, options,
                           [&status](LoadResult*) { return std::move(status); });
}

}  // namespace

LoadResult LoadReplacingBlocks(const std::shared_ptr<arrow::RecordBatchReader>& reader,
                               const DeltaLakeConfig& config, const LoadOptions& options,
                               BlockSpan blocks) {
  if (options.mode != LoadMode::kAppend) {
    return Refused(
        config, options,
        InvalidInputError("a load that replaces its blocks appends (mode ",
                          LoadModeName(options.mode), " replaces rows its own way)"));
  }
  if (blocks.first > blocks.last || blocks.last > uint64_t{INT64_MAX}) {
    return Refused(config, options,
                   InvalidInputError("the blocks to replace, ", blocks.first, "..",
                                     blocks.last, ", are no span of block numbers"));
  }
  if (options.commit_every_rows) {
    return Refused(
        config, options,
        InvalidInputError("commit_every_rows does not combine with a load that "
                          "replaces its blocks (a partition of the SDK's "
                          "parallel load is one commit); leave it out"));
  }
  if (reader == nullptr) {
    return Refused(config, options, InvalidInputError("no Arrow data to load"));
  }
  auto spool = Spool::Write(reader, options, blocks);
  if (!spool.ok()) return Refused(config, options, spool.status());
  const auto records = Replacing(options.block_column, blocks);
  const BackoffPolicy backoff{std::chrono::milliseconds(20), std::chrono::seconds(1)};
  LoadResult result;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) options.sleep(backoff.Delay(attempt - 1));
    auto rows = (*spool)->Open();
    if (!rows.ok()) return Refused(config, options, rows.status());
    result = internal::LoadRecordBatchesRecorded(*rows, config, options, records);
    if (!IsError(result.status, ErrorCode::kCommitConflict)) break;
  }
  return result;
}

}  // namespace ampdelta::loader
