#include "ampdelta/loader/reorg_undo.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string_view>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/log/schema.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

// Rows to keep: those whose _amp_batch_id names none of `ids` and whose block lies in
// none of `spans` (the invalidated spans of their file).
arrow::Result<std::pair<std::shared_ptr<arrow::Array>, int64_t>> KeepMask(
    const arrow::RecordBatch& rows, const std::set<std::string>& ids,
    const std::vector<amp::BlockRange>& spans, const std::string& block_column) {
  auto column = rows.GetColumnByName(kBatchIdColumn);
  if (column == nullptr && !ids.empty()) {
    return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                     "cannot undo a reorg: the table has no ", kBatchIdColumn,
                     " column (state.store_batch_id was off)");
  }
  std::shared_ptr<arrow::Int64Array> blocks;
  if (!spans.empty()) {
    auto block = rows.GetColumnByName(block_column);
    if (block == nullptr || !arrow::is_integer(block->type_id())) {
      return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::Invalid,
                       "cannot undo a reorg into compacted blocks: the table has no "
                       "integer block column '",
                       block_column, "'");
    }
    ARROW_ASSIGN_OR_RAISE(auto cast, arrow::compute::Cast(*block, arrow::int64()));
    blocks = std::static_pointer_cast<arrow::Int64Array>(cast);
  }
  const auto in_span = [&spans](int64_t block) {
    return block >= 0 && std::any_of(spans.begin(), spans.end(), [&](const auto& span) {
             const auto number = static_cast<uint64_t>(block);
             return number >= span.start && number <= span.end;
           });
  };
  arrow::BooleanBuilder mask;
  ARROW_RETURN_NOT_OK(mask.Reserve(rows.num_rows()));
  int64_t kept = 0;
  const auto* values = static_cast<const arrow::StringArray*>(column.get());
  for (int64_t i = 0; i < rows.num_rows(); ++i) {
    bool keep = true;
    if (values != nullptr && !ids.empty() && values->IsValid(i)) {
      std::string_view value = values->GetView(i);
      size_t from = 0;
      while (keep && from <= value.size()) {
        const size_t bar = std::min(value.find('|', from), value.size());
        keep = ids.count(std::string(value.substr(from, bar - from))) == 0;
        from = bar + 1;
      }
    }
    if (keep && blocks != nullptr && blocks->IsValid(i))
      keep = !in_span(blocks->Value(i));
    mask.UnsafeAppend(keep);
    kept += keep ? 1 : 0;
  }
  ARROW_ASSIGN_OR_RAISE(auto array, mask.Finish());
  return std::make_pair(std::shared_ptr<arrow::Array>(array), kept);
}

// Set (or, when empty, erase) a stream's tag.
void SetTag(delta::NullableStringMap* tags, const std::string& key,
            const std::vector<amp::BlockRange>& ranges) {
  if (ranges.empty()) {
    tags->erase(key);
  } else {
    (*tags)[key] = RangesToTag(ranges);
  }
}

}  // namespace

bool Invalidation::Covers(const amp::BlockRange& range) const {
  return batch_ids.count(BatchId(range)) != 0 ||
         std::find(spans.begin(), spans.end(), range) != spans.end();
}

Invalidation Invalidate(const StreamState& state,
                        const std::vector<amp::BlockRange>& invalidated) {
  Invalidation out;
  for (const auto& fork : invalidated) {
    if (auto it = state.ranges.find(fork.network); it != state.ranges.end()) {
      for (const auto& range : it->second) {
        if (range.end >= fork.start) out.batch_ids.insert(BatchId(range));
      }
    }
    if (auto it = state.spans.find(fork.network); it != state.spans.end()) {
      for (const auto& span : it->second) {
        if (span.end >= fork.start &&
            std::find(out.spans.begin(), out.spans.end(), span) == out.spans.end()) {
          out.spans.push_back(span);
        }
      }
    }
  }
  return out;
}

arrow::Result<UndoStaged> StageUndo(const delta::Snapshot& snapshot,
                                    const std::string& app_id, const StreamState& state,
                                    const std::vector<amp::BlockRange>& invalidated,
                                    const Invalidation& undo,
                                    const std::string& block_column,
                                    delta::TableWriter* writer) {
  UndoStaged staged;
  const auto valid = [&](const amp::BlockRange& range) { return !undo.Covers(range); };
  // Files whose recorded ranges or spans include an invalidated one.
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
  FileRecord kept_record;
  // Rows marked in deletion vectors (and not recorded in a change feed) are never copied:
  // the columns that decide which go are all the undo reads.
  std::vector<std::string> marking_columns;
  if (writer->deletion_vectors() != nullptr && !writer->records_changes()) {
    for (const std::string& name : {std::string(kBatchIdColumn), block_column}) {
      if (delta::FindFieldIgnoreCase(*snapshot.schema(), name) >= 0)
        marking_columns.push_back(name);
    }
  }
  for (const delta::Add* file : affected) {
    ARROW_ASSIGN_OR_RAISE(FileRecord record, ReadFileRecord(*file, app_id));
    FileRecord remaining;
    std::copy_if(record.ranges.begin(), record.ranges.end(),
                 std::back_inserter(remaining.ranges), valid);
    std::copy_if(record.spans.begin(), record.spans.end(),
                 std::back_inserter(remaining.spans), valid);
    std::vector<amp::BlockRange> invalid_spans;
    std::copy_if(record.spans.begin(), record.spans.end(),
                 std::back_inserter(invalid_spans),
                 [&](const amp::BlockRange& span) { return !valid(span); });
    read.push_back(snapshot.FileKey(file->path));
    ARROW_ASSIGN_OR_RAISE(auto table,
                          delta::ReadDataFile(snapshot, *file, marking_columns));
    ARROW_ASSIGN_OR_RAISE(auto rows, table->CombineChunksToBatch());
    ARROW_ASSIGN_OR_RAISE(auto keep,
                          KeepMask(*rows, undo.batch_ids, invalid_spans, block_column));
    const int64_t kept = keep.second;
    const int64_t removed = rows->num_rows() - kept;
    if (removed == 0) {
      // The tags named a microbatch whose rows went to another file: re-tag only.
      delta::Add copy = *file;
      copy.data_change = false;
      if (!copy.tags) copy.tags.emplace();
      SetTag(&*copy.tags, RangesTagKey(app_id), remaining.ranges);
      SetTag(&*copy.tags, SpansTagKey(app_id), remaining.spans);
      retagged.push_back(std::move(copy));
      continue;
    }
    staged.rows_removed += removed;
    removes.push_back(delta::RemoveFor(*file));
    if (writer->records_changes()) {
      // The change data feed shows the undo as deletes of exactly these rows.
      ARROW_ASSIGN_OR_RAISE(arrow::Datum gone,
                            arrow::compute::CallFunction("invert", {keep.first}));
      ARROW_ASSIGN_OR_RAISE(arrow::Datum deleted, arrow::compute::Filter(rows, gone));
      ARROW_RETURN_NOT_OK(
          writer->RecordChange(deleted.record_batch(), delta::ChangeType::kDelete));
    }
    if (kept == 0) continue;
    if (auto* dvs = writer->deletion_vectors()) {
      // The file stays, its undone rows marked deleted; its tags name what is left.
      ARROW_ASSIGN_OR_RAISE(delta::Add marked, dvs->MarkDeleted(*file, *keep.first));
      if (!marked.tags) marked.tags.emplace();
      SetTag(&*marked.tags, RangesTagKey(app_id), remaining.ranges);
      SetTag(&*marked.tags, SpansTagKey(app_id), remaining.spans);
      retagged.push_back(std::move(marked));
      ++staged.files_marked;
      continue;
    }
    ++staged.files_rewritten;
    ARROW_ASSIGN_OR_RAISE(arrow::Datum filtered,
                          arrow::compute::Filter(rows, keep.first));
    ARROW_RETURN_NOT_OK(writer->Write(filtered.record_batch()));
    kept_record.ranges.insert(kept_record.ranges.end(), remaining.ranges.begin(),
                              remaining.ranges.end());
    kept_record.spans.insert(kept_record.spans.end(), remaining.spans.begin(),
                             remaining.spans.end());
  }
  delta::NullableStringMap kept_tags;
  SetTag(&kept_tags, RangesTagKey(app_id), kept_record.ranges);
  SetTag(&kept_tags, SpansTagKey(app_id), kept_record.spans);
  if (!kept_tags.empty()) writer->SetFileTags(kept_tags);
  writer->StageRemoves(std::move(removes), std::move(read));
  writer->StageAdds(std::move(retagged));
  writer->AddOperationMetrics({{"numDeletedRows", std::to_string(staged.rows_removed)}});
  std::set<std::string> networks;
  for (const auto* lists : {&state.ranges, &state.spans}) {
    for (const auto& [network, list] : *lists) networks.insert(network);
  }
  for (const auto& network : networks) {
    const amp::BlockRange* newest = nullptr;
    const std::vector<amp::BlockRange> recorded = state.Recorded(network);
    for (const auto& range : recorded) {
      if (valid(range) && (newest == nullptr || range.end > newest->end)) newest = &range;
    }
    if (newest != nullptr) staged.surviving.push_back(*newest);
  }
  return staged;
}

}  // namespace ampdelta::loader
