#include "ampdelta/loader/reorg_undo.h"

#include <memory>
#include <string_view>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/read/scan.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

// Rows to keep: those whose _amp_batch_id names no invalidated microbatch.
arrow::Result<std::pair<std::shared_ptr<arrow::Array>, int64_t>> KeepMask(
    const arrow::RecordBatch& rows, const std::set<std::string>& ids) {
  auto column = rows.GetColumnByName(kBatchIdColumn);
  if (column == nullptr) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "cannot undo a reorg: the table has no ", kBatchIdColumn,
                     " column (state.store_batch_id was off)");
  }
  arrow::BooleanBuilder mask;
  ARROW_RETURN_NOT_OK(mask.Reserve(rows.num_rows()));
  int64_t kept = 0;
  const auto& values = static_cast<const arrow::StringArray&>(*column);
  for (int64_t i = 0; i < rows.num_rows(); ++i) {
    bool keep = true;
    if (values.IsValid(i)) {
      std::string_view value = values.GetView(i);
      size_t from = 0;
      while (keep && from <= value.size()) {
        const size_t bar = std::min(value.find('|', from), value.size());
        keep = ids.count(std::string(value.substr(from, bar - from))) == 0;
        from = bar + 1;
      }
    }
    mask.UnsafeAppend(keep);
    kept += keep ? 1 : 0;
  }
  ARROW_ASSIGN_OR_RAISE(auto array, mask.Finish());
  return std::make_pair(std::shared_ptr<arrow::Array>(array), kept);
}

}  // namespace

std::set<std::string> InvalidatedBatchIds(
    const StreamState& state, const std::vector<amp::BlockRange>& invalidated) {
  std::set<std::string> ids;
  for (const auto& fork : invalidated) {
    auto it = state.ranges.find(fork.network);
    if (it == state.ranges.end()) continue;
    for (const auto& range : it->second) {
      if (range.end >= fork.start) ids.insert(BatchId(range));
    }
  }
  return ids;
}

arrow::Result<UndoStaged> StageUndo(const delta::Snapshot& snapshot,
                                    const std::string& app_id, const StreamState& state,
                                    const std::vector<amp::BlockRange>& invalidated,
                                    const std::set<std::string>& ids,
                                    delta::TableWriter* writer) {
  UndoStaged staged;
  auto invalid = [&](const amp::BlockRange& range) {
    return ids.count(BatchId(range)) != 0;
  };
  // Files whose recorded ranges include an invalidated microbatch.
  std::vector<const delta::Add*> affected;
  for (const auto& file : snapshot.files()) {
    for (const auto& fork : invalidated) {
      ARROW_ASSIGN_OR_RAISE(bool reaches,
                            FileReachesBlock(file, app_id, fork.network, fork.start));
      if (reaches) {
        affected.push_back(&file);
        break;
      }
    }
  }
  staged.files_touched = static_cast<int64_t>(affected.size());
  std::vector<delta::Remove> removes;
  std::vector<delta::Add> retagged;
  std::vector<std::string> read;
  std::vector<amp::BlockRange> kept_ranges;
  for (const delta::Add* file : affected) {
    ARROW_ASSIGN_OR_RAISE(auto ranges,
                          RangesFromTag(*file->tags->at(RangesTagKey(app_id))));
    std::vector<amp::BlockRange> remaining;
    for (const auto& range : ranges) {
      if (!invalid(range)) remaining.push_back(range);
    }
    read.push_back(snapshot.FileKey(file->path));
    ARROW_ASSIGN_OR_RAISE(auto table, delta::ReadDataFile(snapshot, *file));
    ARROW_ASSIGN_OR_RAISE(auto rows, table->CombineChunksToBatch());
    ARROW_ASSIGN_OR_RAISE(auto keep, KeepMask(*rows, ids));
    const int64_t kept = keep.second;
    const int64_t removed = rows->num_rows() - kept;
    if (removed == 0) {
      // The tags named a microbatch whose rows went to another file: re-tag only.
      delta::Add copy = *file;
      copy.data_change = false;
      if (remaining.empty()) {
        copy.tags->erase(RangesTagKey(app_id));
      } else {
        (*copy.tags)[RangesTagKey(app_id)] = RangesToTag(remaining);
      }
      retagged.push_back(std::move(copy));
      continue;
    }
    staged.rows_removed += removed;
    removes.push_back(delta::RemoveFor(*file));
    if (kept == 0) continue;
    ++staged.files_rewritten;
    ARROW_ASSIGN_OR_RAISE(arrow::Datum filtered,
                          arrow::compute::Filter(rows, keep.first));
    ARROW_RETURN_NOT_OK(writer->Write(filtered.record_batch()));
    kept_ranges.insert(kept_ranges.end(), remaining.begin(), remaining.end());
  }
  if (!kept_ranges.empty()) {
    writer->SetFileTags({{RangesTagKey(app_id), RangesToTag(kept_ranges)}});
  }
  writer->StageRemoves(std::move(removes), std::move(read));
  writer->StageAdds(std::move(retagged));
  writer->AddOperationMetrics({{"numDeletedRows", std::to_string(staged.rows_removed)}});
  for (const auto& [network, network_ranges] : state.ranges) {
    const amp::BlockRange* newest = nullptr;
    for (const auto& range : network_ranges) {
      if (!invalid(range) && (newest == nullptr || range.end > newest->end))
        newest = &range;
    }
    if (newest != nullptr) staged.surviving.push_back(*newest);
  }
  return staged;
}

}  // namespace ampdelta::loader
