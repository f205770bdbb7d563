#include "ampdelta/devserver/stream_pacer.h"

namespace ampdelta::devserver {

StreamPacer::Stream::~Stream() {
  std::lock_guard<std::mutex> lock(pacer_->mutex_);
  --pacer_->open_;
  if (waiting_) --pacer_->waiting_;
}

void StreamPacer::Stream::SetWaiting(bool waiting) {
  std::lock_guard<std::mutex> lock(pacer_->mutex_);
  if (waiting == waiting_) return;
  waiting_ = waiting;
  pacer_->waiting_ += waiting ? 1 : -1;
}

std::unique_ptr<StreamPacer::Stream> StreamPacer::Open() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++open_;
  return std::make_unique<Stream>(this);
}

bool StreamPacer::AllWaiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_ > 0 && waiting_ == open_;
}

}  // namespace ampdelta::devserver
