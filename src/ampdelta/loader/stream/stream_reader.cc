#include "ampdelta/loader/stream/stream_reader.h"

#include <utility>

namespace ampdelta::loader {

void MessageQueue::Push(StreamMessage message) {
  std::unique_lock<std::mutex> lock(mutex_);
  space_.wait(lock, [&] { return closed_ || queue_.size() < kCapacity; });
  if (closed_) return;
  queue_.push_back(std::move(message));
  ready_.notify_one();
}

std::optional<StreamMessage> MessageQueue::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !queue_.empty(); }))
    return std::nullopt;
  StreamMessage message = std::move(queue_.front());
  queue_.pop_front();
  space_.notify_one();
  return message;
}

void MessageQueue::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  space_.notify_all();
}

StreamReader::StreamReader(std::unique_ptr<amp::QueryStream> stream)
    : stream_(std::move(stream)) {
  thread_ = std::thread([this] {
    while (true) {
      StreamMessage message = stream_->Next();
      const bool last = !message.ok() || !message->has_value();
      queue_.Push(std::move(message));
      if (last) break;
    }
  });
}

StreamReader::~StreamReader() {
  stream_->Cancel();
  queue_.Close();
  thread_.join();
}

}  // namespace ampdelta::loader
