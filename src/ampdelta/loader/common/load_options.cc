#include "ampdelta/loader/common/load_options.h"

#include "ampdelta/util/status.h"

namespace ampdelta::loader {

arrow::Result<LoadMode> ParseLoadMode(const std::string& name) {
  if (name == "append") return LoadMode::kAppend;
  if (name == "overwrite") return LoadMode::kOverwrite;
  if (name == "merge") return LoadMode::kMerge;
  if (name == "upsert") return LoadMode::kUpsert;
  if (name == "error" || name == "errorifexists") return LoadMode::kErrorIfExists;
  if (name == "ignore") return LoadMode::kIgnore;
  return InvalidInputError("Invalid save mode provided: ", name,
                           ", only these are supported: ['append', 'overwrite', 'merge', "
                           "'upsert', 'error', 'ignore']");
}

const char* LoadModeName(LoadMode mode) {
  switch (mode) {
    case LoadMode::kAppend:
      return "append";
    case LoadMode::kOverwrite:
      return "overwrite";
    case LoadMode::kMerge:
      return "merge";
    case LoadMode::kUpsert:
      return "upsert";
    case LoadMode::kErrorIfExists:
      return "error";
    case LoadMode::kIgnore:
      return "ignore";
  }
  return "append";
}

bool IsMerge(LoadMode mode) {
  return mode == LoadMode::kMerge || mode == LoadMode::kUpsert;
}

void QueryCancellation::CancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  for (const auto& [handle, stream] : streams_) stream->Cancel();
}

int QueryCancellation::Register(amp::QueryStream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancelled_) stream->Cancel();
  streams_[++next_handle_] = stream;
  return next_handle_;
}

void QueryCancellation::Unregister(int handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.erase(handle);
}

}  // namespace ampdelta::loader
