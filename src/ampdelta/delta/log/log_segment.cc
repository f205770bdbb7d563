#include "ampdelta/delta/log/log_segment.h"

#include <algorithm>
#include <map>

#include <arrow/buffer.h>
#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"

namespace ampdelta::delta {

arrow::Status CorruptLogError(const std::string& root, const std::string& what) {
  return MakeError(ErrorCode::kCorruptLog, arrow::StatusCode::IOError, "Delta log of ",
                   root, " is unusable: ", what);
}
namespace {

struct Listing {
  std::map<Version, ParsedLogPath> commits;
  std::map<Version, std::vector<ParsedLogPath>> checkpoint_files;
  bool any = false;
};

arrow::Result<Listing> ListLog(storage::ObjectStore& store,
                               const std::string& start_after) {
  Listing listing;
  auto listed = store.List(std::string(kLogDir) + "/", start_after);
  if (!listed.ok()) {
    const ErrorDetail* detail = GetErrorDetail(listed.status());
    if (detail != nullptr && detail->subcode() == "ENOTDIR") {
      // The store found a file where the log's folder should be: damage, not a missing
      // table (a writer would otherwise try to create the table over it).
      return CorruptLogError(store.root_uri(), "_delta_log is a file, not a folder");
    }
    return listed.status();
  }
  const std::vector<storage::ObjectMeta>& objects = *listed;
  for (const auto& object : objects) {
    listing.any = true;
    auto parsed = ParseLogPath(object.path);
    if (!parsed) continue;
    parsed->size = object.size;
    parsed->last_modified_ms = object.last_modified_ms;
    if (parsed->type == LogFileType::kCommit) {
      listing.commits[parsed->version] = *parsed;
    } else if (parsed->is_checkpoint()) {
      listing.checkpoint_files[parsed->version].push_back(*parsed);
    }
  }
  return listing;
}

// Return the complete checkpoints of a listing, newest first.
std::vector<CheckpointFiles> CompleteCheckpoints(const Listing& listing) {
  std::vector<CheckpointFiles> out;
  for (auto it = listing.checkpoint_files.rbegin(); it != listing.checkpoint_files.rend();
       ++it) {
    const auto& files = it->second;
    // Prefer a UUID-named V2 checkpoint, then a classic one, then a complete multi-part
    // set.
    const ParsedLogPath* single = nullptr;
    for (const auto& file : files) {
      if (file.type == LogFileType::kUuidCheckpointJson ||
          file.type == LogFileType::kUuidCheckpointParquet) {
        single = &file;
        break;
      }
    }
    if (single == nullptr) {
      for (const auto& file : files) {
        if (file.type == LogFileType::kCheckpoint) single = &file;
      }
    }
    if (single != nullptr) {
      out.push_back(CheckpointFiles{it->first, {*single}});
      continue;
    }
    std::map<int32_t, std::map<int32_t, ParsedLogPath>> by_parts;
    for (const auto& file : files) {
      if (file.type == LogFileType::kMultiPartCheckpoint)
        by_parts[file.parts][file.part] = file;
    }
    for (const auto& [parts, found] : by_parts) {
      if (static_cast<int32_t>(found.size()) == parts) {
        CheckpointFiles checkpoint{it->first, {}};
        for (const auto& [part, file] : found) checkpoint.files.push_back(file);
        out.push_back(std::move(checkpoint));
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::optional<Version> ReadLastCheckpointHint(storage::ObjectStore& store) {
  auto data = store.Get(LastCheckpointPath());
  if (!data.ok()) return std::nullopt;
  auto doc = json_util::ParseJson((*data)->ToString());
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("version") ||
      !json_util::AsInt64(doc["version"])) {
    AMPDELTA_LOG_WARN("delta ignoring unreadable _last_checkpoint table=",
                      store.root_uri());
    return std::nullopt;
  }
  return *json_util::AsInt64(doc["version"]);
}

arrow::Result<std::vector<ParsedLogPath>> ListCommits(storage::ObjectStore& store) {
  ARROW_ASSIGN_OR_RAISE(Listing listing, ListLog(store, ""));
  std::vector<ParsedLogPath> commits;
  for (auto& [version, commit] : listing.commits) commits.push_back(commit);
  return commits;
}

namespace {

// In a file system a folder named like the commit after `latest` hides it from the
// listing, and would make every later commit fail: the log is damaged.
arrow::Status CheckNoFolderAfter(storage::ObjectStore& store, Version latest) {
  if (!store.is_file_system()) return arrow::Status::OK();
  auto next = store.Head(CommitPath(latest + 1));
  const ErrorDetail* detail = next.ok() ? nullptr : GetErrorDetail(next.status());
  if (detail != nullptr && detail->subcode() == "EISDIR") {
    return CorruptLogError(store.root_uri(),
                           CommitPath(latest + 1) + " is a folder, not a commit file");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<LogSegment> BuildLogSegment(storage::ObjectStore& store,
                                          std::optional<Version> target) {
  const std::string root = store.root_uri();
  // Start the listing at the hinted checkpoint when it can serve the target; fall back to
  // a full listing when the hint is stale or points at nothing.
  const std::optional<Version> named = ReadLastCheckpointHint(store);
  std::optional<Version> hint = named;
  if (hint && target && *hint > *target) hint.reset();
  Listing listing;
  bool full = true;
  bool stale_hint = false;
  if (hint) {
    ARROW_ASSIGN_OR_RAISE(
        listing, ListLog(store, std::string(kLogDir) + "/" + VersionDigits(*hint)));
    auto checkpoints = CompleteCheckpoints(listing);
    full = checkpoints.empty();
    stale_hint = full;
  }
  if (full) {
    ARROW_ASSIGN_OR_RAISE(listing, ListLog(store, ""));
  }
  if (listing.commits.empty() && listing.checkpoint_files.empty()) {
    return NotFoundError("no Delta table at ", root, " (no _delta_log entries)");
  }

  std::vector<CheckpointFiles> checkpoints = CompleteCheckpoints(listing);
  Version latest = -1;
  if (!listing.commits.empty()) latest = listing.commits.rbegin()->first;
  if (!checkpoints.empty()) latest = std::max(latest, checkpoints.front().version);
  if (latest < 0) return CorruptLogError(root, "no commit and no complete checkpoint");
  ARROW_RETURN_NOT_OK(CheckNoFolderAfter(store, latest));
  const Version version = target.value_or(latest);
  if (version < 0) return InvalidInputError("table version must be >= 0, got ", version);
  if (version > latest) {
    return InvalidInputError("version ", version, " of ", root,
                             " does not exist (latest is ", latest, ")");
  }

  LogSegment segment;
  segment.version = version;
  if (named && !target) {
    // The hint names a version past the latest, or one without a complete checkpoint.
    stale_hint = stale_hint || *named > latest;
    segment.stale_checkpoint_hint = stale_hint;
    if (stale_hint) segment.stale_hint_version = named;
  }
  for (auto& [v, commit] : listing.commits) segment.listed_commits.push_back(commit);
  for (auto& checkpoint : checkpoints) {
    if (checkpoint.version > version) continue;
    if (!segment.checkpoint) {
      segment.checkpoint = checkpoint;
    } else {
      segment.older_checkpoints.push_back(checkpoint);
    }
  }
  const Version first_needed = segment.checkpoint ? segment.checkpoint->version + 1 : 0;
  for (Version v = first_needed; v <= version; ++v) {
    auto it = listing.commits.find(v);
    if (it == listing.commits.end()) {
      if (!segment.checkpoint && v == 0) {
        return CorruptLogError(
            root, "commit 0 is missing and there is no checkpoint to start from");
      }
      Version next = v;
      while (next <= version && listing.commits.count(next) == 0) ++next;
      return CorruptLogError(root,
                             "versions are not contiguous: commit " + std::to_string(v) +
                                 (next - 1 > v ? ".." + std::to_string(next - 1) : "") +
                                 " is missing (needed to reconstruct version " +
                                 std::to_string(version) + ")");
    }
    segment.commits.push_back(it->second);
  }
  return segment;
}

}  // namespace ampdelta::delta
