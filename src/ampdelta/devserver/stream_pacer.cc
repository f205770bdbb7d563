#include "ampdelta/devserver/stream_pacer.h"

#include <algorithm>

namespace ampdelta::devserver {

StreamPacer::Stream::~Stream() {
  std::lock_guard<std::mutex> lock(pacer_->mutex_);
  auto& streams = pacer_->streams_;
  streams.erase(std::remove(streams.begin(), streams.end(), this), streams.end());
}

void StreamPacer::Stream::WaitingAt(const Dataset* dataset, uint64_t change) {
  std::lock_guard<std::mutex> lock(pacer_->mutex_);
  dataset_ = dataset;
  waiting_at_ = change;
}

void StreamPacer::Stream::Sending() {
  std::lock_guard<std::mutex> lock(pacer_->mutex_);
  waiting_at_.reset();
}

std::unique_ptr<StreamPacer::Stream> StreamPacer::Open() {
  std::unique_ptr<Stream> stream(new Stream(this));
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(stream.get());
  return stream;
}

bool StreamPacer::AllWaitingAt(const Dataset* chain, uint64_t change) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !streams_.empty() &&
         std::all_of(streams_.begin(), streams_.end(), [&](const Stream* stream) {
           return stream->waiting_at_ &&
                  (stream->dataset_ != chain || *stream->waiting_at_ == change);
         });
}

}  // namespace ampdelta::devserver
