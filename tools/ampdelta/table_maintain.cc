// `ampdelta table delete|checkpoint|optimize|vacuum|restore`.

#include <chrono>
#include <iostream>
#include <memory>

#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/ops/delete.h"
#include "ampdelta/delta/ops/optimize.h"
#include "ampdelta/delta/ops/restore.h"
#include "ampdelta/delta/ops/vacuum.h"
#include "ampdelta/delta/txn/checkpoint_writer.h"
#include "ampdelta/delta/write/data_file_options.h"
#include "commands.h"
#include "table_actions.h"

namespace ampdelta::cli {

arrow::Status Delete(const TableArgs& args) {
  if (args.all_rows == args.where.has_value()) {
    return InvalidInputError(args.all_rows
                                 ? "give --where or --all, not both"
                                 : "table delete needs --where PREDICATE, or --all "
                                   "to delete every row");
  }
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  ARROW_ASSIGN_OR_RAISE(auto result, args.all_rows
                                         ? delta::DeleteAllRows(store)
                                         : delta::DeleteRows(store, *args.where));
  if (!result.version) {
    std::cout << "nothing matched; no commit (files_skipped=" << result.files_skipped
              << ")" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << *result.version << " rows_deleted=" << result.rows_deleted
            << " files_removed=" << result.files_removed
            << " files_added=" << result.files_added
            << " rows_copied=" << result.rows_copied
            << " files_skipped=" << result.files_skipped << std::endl;
  return arrow::Status::OK();
}

arrow::Status Checkpoint(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ARROW_ASSIGN_OR_RAISE(auto info,
                        delta::WriteCheckpoint(*snapshot, now, args.checkpoint));
  std::cout << "checkpoint version=" << info.version << " actions=" << info.num_actions
            << " files=" << info.num_add_files << " bytes=" << info.size_in_bytes
            << " sidecars=" << info.num_sidecars << " path=" << info.path << std::endl;
  return arrow::Status::OK();
}

arrow::Status Optimize(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  delta::OptimizeOptions options;
  options.target_size = args.target_size;
  if (args.rewrite) options.stitch_min_rows_per_group = 0;
  ARROW_ASSIGN_OR_RAISE(options.files.codec, delta::ParseCodec(args.compression));
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Optimize(store, options));
  if (!result.version) {
    std::cout << "nothing to compact" << std::endl;
    return arrow::Status::OK();
  }
  std::cout << "version=" << *result.version << " files_removed=" << result.files_removed
            << " files_added=" << result.files_added
            << " files_stitched=" << result.files_stitched
            << " partitions_optimized=" << result.partitions_optimized
            << " rows=" << result.rows << std::endl;
  return arrow::Status::OK();
}

arrow::Status Vacuum(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  delta::VacuumOptions options;
  options.retention_hours = args.retention_hours;
  options.dry_run = args.dry_run;
  options.full = args.full;
  options.enforce_retention = !args.force;
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Vacuum(store, options));
  for (const auto& file : result.files) std::cout << file << "\n";
  std::cout << (result.dry_run ? "would delete " : "deleted ") << result.files.size()
            << " files (" << result.bytes << " bytes)";
  if (!result.temporary_files.empty() || result.leases_expired > 0) {
    std::cout << ", " << result.temporary_files.size() << " abandoned temporary files, "
              << result.leases_expired << " expired write leases";
  }
  std::cout << std::endl;
  return arrow::Status::OK();
}

arrow::Status Restore(const TableArgs& args) {
  ARROW_ASSIGN_OR_RAISE(auto store, OpenTableStore(args));
  if (!args.version) return InvalidInputError("restore needs --version");
  ARROW_ASSIGN_OR_RAISE(auto result, delta::Restore(store, *args.version));
  std::cout << "version=" << result.version << " restored to version " << *args.version
            << std::endl;
  return arrow::Status::OK();
}

}  // namespace ampdelta::cli
