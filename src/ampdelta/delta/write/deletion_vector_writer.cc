#include "ampdelta/delta/write/deletion_vector_writer.h"

#include <utility>

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/file_stats.h"
#include "ampdelta/delta/log/table_feature.h"
#include "ampdelta/delta/read/deletion_vector.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {

namespace {

// PROTOCOL.md "Deletion Vector File Storage Format": the first (here the only) DV of a
// file starts right after the version byte.
constexpr int32_t kFirstDvOffset = 1;

}  // namespace

bool WritesDeletionVectors(const Snapshot& snapshot) {
  return snapshot.properties().enable_deletion_vectors &&
         HasWriterFeature(snapshot.protocol(), TableFeature::kDeletionVectors);
}

DeletionVectorWriter::DeletionVectorWriter(std::shared_ptr<storage::ObjectStore> store,
                                           std::string token)
    : store_(std::move(store)), token_(std::move(token)) {}

arrow::Result<Add> DeletionVectorWriter::MarkDeleted(const Add& file,
                                                     const arrow::Array& keep) {
  if (keep.type_id() != arrow::Type::BOOL) {
    return arrow::Status::Invalid("a keep-mask must be boolean, got ",
                                  keep.type()->ToString());
  }
  const auto& mask = static_cast<const arrow::BooleanArray&>(keep);
  DeletedRows before;
  if (file.deletion_vector) {
    ARROW_ASSIGN_OR_RAISE(before, LoadDeletionVector(*store_, *file.deletion_vector));
  }
  const auto recorded = StatsNumRecords(file);
  if (recorded && *recorded - before.cardinality() != mask.length()) {
    return arrow::Status::Invalid("a keep-mask of ", mask.length(), " rows for ",
                                  file.path, ", which has ",
                                  *recorded - before.cardinality(), " live rows");
  }
  // Live row i is the i-th physical row the old DV does not delete.
  std::vector<uint64_t> deleted;
  uint64_t physical = 0;
  for (int64_t live = 0; live < mask.length(); ++live, ++physical) {
    while (before.Contains(physical)) ++physical;
    if (!mask.IsValid(live) || !mask.Value(live)) deleted.push_back(physical);
  }
  if (deleted.empty() || static_cast<int64_t>(deleted.size()) == mask.length()) {
    return arrow::Status::Invalid("a deletion vector for ", file.path, " must delete ",
                                  "some of its ", mask.length(), " rows, not ",
                                  deleted.size());
  }
  const int64_t physical_rows = mask.length() + before.cardinality();
  ARROW_ASSIGN_OR_RAISE(DeletedRows after, before.Union(deleted));
  const std::string bitmap = SerializeRoaring64Portable(after);
  const std::string uuid = NewUuid();
  ARROW_ASSIGN_OR_RAISE(std::string path_or_inline,
                        UuidDeletionVectorPathOrInline(token_, uuid));
  // The descriptor's own path resolution names the file, so writer and readers agree.
  ARROW_ASSIGN_OR_RAISE(std::string key, UuidDeletionVectorPath(path_or_inline));
  ARROW_RETURN_NOT_OK(
      store_->Put(key, arrow::Buffer::FromString(EncodeDeletionVectorFile(bitmap)),
                  storage::PutMode::kCreateIfAbsent));
  files_.push_back(key);

  DeletionVectorDescriptor dv;
  dv.storage_type = "u";
  dv.path_or_inline_dv = std::move(path_or_inline);
  dv.offset = kFirstDvOffset;
  dv.size_in_bytes = static_cast<int32_t>(bitmap.size());
  dv.cardinality = after.cardinality();
  Add marked = file;
  marked.deletion_vector = std::move(dv);
  // min and max may now describe deleted rows only (PROTOCOL.md "Per-file
  // Statistics", tightBounds).
  marked.stats = FileStats::Of(file).WithLooseBounds(physical_rows);
  marked.data_change = true;
  return marked;
}

arrow::Status DeletionVectorWriter::Abort() {
  arrow::Status status = store_->DeleteWithFolders(files_);
  files_.clear();
  return status;
}

}  // namespace ampdelta::delta
