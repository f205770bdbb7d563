#include "ampdelta/loader/stream/reorg_undo.h"

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
#include "ampdelta/delta/write/row_edit.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

// Rows to keep: those whose _amp_batch_id names none of `ids` and whose block lies in
// none of `spans` (the invalidated spans of their file).
arrow::Result<std::shared_ptr<arrow::Array>> KeepMask(
    const arrow::RecordBatch& rows, const std::set<std::string>& ids,
    const std::vector<amp::BlockRange>& spans, const std::string& block_column) {
  auto column = rows.GetColumnByName(kBatchIdColumn);
  if (column == nullptr && !ids.empty()) {
    return InvalidInputError("cannot undo a reorg: the table has no ", kBatchIdColumn,
                             " column (state.store_batch_id was off)");
  }
  std::shared_ptr<arrow::Int64Array> blocks;
  if (!spans.empty()) {
    auto block = rows.GetColumnByName(block_column);
    if (block == nullptr || !arrow::is_integer(block->type_id())) {
      return InvalidInputError(
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
  }
  return mask.Finish();
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

namespace {

// Files whose recorded ranges or spans include an invalidated one.
arrow::Result<std::vector<const delta::Add*>> AffectedFiles(
    const delta::Snapshot& snapshot, const std::string& app_id,
    const std::vector<amp::BlockRange>& invalidated) {
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
  return affected;
}

// The columns that decide which rows an undo removes: its batch ids and its blocks.
std::vector<std::string> DecidingColumns(const delta::Snapshot& snapshot,
                                         const std::string& block_column) {
  std::vector<std::string> columns;
  for (const std::string& name : {std::string(kBatchIdColumn), block_column}) {
    if (delta::FindFieldIgnoreCase(*snapshot.schema(), name) >= 0)
      columns.push_back(name);
  }
  return columns;
}

void SetStreamTags(delta::Add* file, const std::string& app_id,
                   const FileRecord& record) {
  if (!file->tags) file->tags.emplace();
  SetTag(&*file->tags, RangesTagKey(app_id), record.ranges);
  SetTag(&*file->tags, SpansTagKey(app_id), record.spans);
}

// The undo of one affected file, staged in a writer: the file re-tagged when none of its
// rows go, else its undone rows removed (row_edit.h), a file that stays re-tagged.
class FileUndo {
 public:
  FileUndo(const delta::Snapshot& snapshot, const std::string& app_id,
           const Invalidation& undo, const std::string& block_column,
           delta::TableWriter* writer)
      : app_id_(app_id),
        undo_(undo),
        block_column_(block_column),
        writer_(writer),
        deciding_columns_(DecidingColumns(snapshot, block_column)),
        edit_(snapshot, writer) {}

  arrow::Status Stage(const delta::Add& file, UndoStaged* staged) {
    ARROW_ASSIGN_OR_RAISE(FileRecord record, ReadFileRecord(file, app_id_));
    const auto valid = [&](const amp::BlockRange& range) { return !undo_.Covers(range); };
    FileRecord remaining;
    std::vector<amp::BlockRange> invalid_spans;
    std::copy_if(record.ranges.begin(), record.ranges.end(),
                 std::back_inserter(remaining.ranges), valid);
    for (const auto& span : record.spans) {
      (valid(span) ? remaining.spans : invalid_spans).push_back(span);
    }
    ARROW_ASSIGN_OR_RAISE(auto rows, edit_.Read(file, deciding_columns_));
    ARROW_ASSIGN_OR_RAISE(auto keep,
                          KeepMask(*rows, undo_.batch_ids, invalid_spans, block_column_));
    ARROW_ASSIGN_OR_RAISE(const delta::FileEdit done, edit_.Drop(file, rows, keep));
    if (done.rows_removed == 0) {
      // The tags named a microbatch whose rows went to another file: re-tag only.
      edit_.AlsoRead(file);
      delta::Add copy = file;
      copy.data_change = false;
      SetStreamTags(&copy, app_id_, remaining);
      retagged_.push_back(std::move(copy));
      return arrow::Status::OK();
    }
    staged->rows_removed += done.rows_removed;
    if (done.marked != nullptr) {
      // The file stays, its undone rows marked deleted; its tags name what is left.
      SetStreamTags(done.marked, app_id_, remaining);
      ++staged->files_marked;
    }
    if (done.rewritten) {
      ++staged->files_rewritten;
      kept_.ranges.insert(kept_.ranges.end(), remaining.ranges.begin(),
                          remaining.ranges.end());
      kept_.spans.insert(kept_.spans.end(), remaining.spans.begin(),
                         remaining.spans.end());
    }
    return arrow::Status::OK();
  }

  // Stage what every file's undo decided: rewritten files carry the ranges they keep.
  void Finish(UndoStaged* staged_out) {
    const UndoStaged& staged = *staged_out;
    staged_out->kept_ranges = kept_.ranges;
    staged_out->kept_spans = kept_.spans;
    delta::NullableStringMap kept_tags;
    SetTag(&kept_tags, RangesTagKey(app_id_), kept_.ranges);
    SetTag(&kept_tags, SpansTagKey(app_id_), kept_.spans);
    if (!kept_tags.empty()) writer_->SetFileTags(kept_tags);
    writer_->StageEdit(&edit_);
    writer_->StageAdds(std::move(retagged_));
    writer_->AddOperationMetrics(
        {{"numDeletedRows", std::to_string(staged.rows_removed)}});
  }

 private:
  const std::string& app_id_;
  const Invalidation& undo_;
  const std::string& block_column_;
  delta::TableWriter* writer_;
  const std::vector<std::string> deciding_columns_;
  delta::RowEdit edit_;
  std::vector<delta::Add> retagged_;
  FileRecord kept_;
};

// Each network's newest recorded range the undo leaves.
std::vector<amp::BlockRange> SurvivingRanges(const StreamState& state,
                                             const Invalidation& undo) {
  std::vector<amp::BlockRange> surviving;
  std::set<std::string> networks;
  for (const auto* lists : {&state.ranges, &state.spans}) {
    for (const auto& [network, list] : *lists) networks.insert(network);
  }
  for (const auto& network : networks) {
    const amp::BlockRange* newest = nullptr;
    const std::vector<amp::BlockRange> recorded = state.Recorded(network);
    for (const auto& range : recorded) {
      if (!undo.Covers(range) && (newest == nullptr || range.end > newest->end)) {
        newest = &range;
      }
    }
    if (newest != nullptr) surviving.push_back(*newest);
  }
  return surviving;
}

}  // namespace

arrow::Result<UndoStaged> StageUndo(const delta::Snapshot& snapshot,
                                    const std::string& app_id, const StreamState& state,
                                    const std::vector<amp::BlockRange>& invalidated,
                                    const Invalidation& undo,
                                    const std::string& block_column,
                                    delta::TableWriter* writer) {
  ARROW_ASSIGN_OR_RAISE(const auto affected,
                        AffectedFiles(snapshot, app_id, invalidated));
  UndoStaged staged;
  staged.files_touched = static_cast<int64_t>(affected.size());
  FileUndo file_undo(snapshot, app_id, undo, block_column, writer);
  for (const delta::Add* file : affected) {
    ARROW_RETURN_NOT_OK(file_undo.Stage(*file, &staged));
  }
  file_undo.Finish(&staged);
  staged.surviving = SurvivingRanges(state, undo);
  return staged;
}

}  // namespace ampdelta::loader
