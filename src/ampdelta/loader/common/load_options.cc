#include "ampdelta/loader/common/load_options.h"

namespace ampdelta::loader {

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
