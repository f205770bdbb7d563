#pragma once

/// \file stream_reader.h
/// \brief A query stream read on its own thread into a bounded queue, so a stream load
/// can commit on a timer while the server is quiet and notice a stop request at once.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <arrow/result.h>

#include "ampdelta/amp/client.h"

namespace ampdelta::loader {

/// \brief One message of a stream: a batch, the end (nullopt), or the stream's failure.
using StreamMessage = arrow::Result<std::optional<amp::ResponseBatch>>;

/// \brief Messages from the reader thread; bounded, so a slow table applies back-pressure
/// to the server. Thread-safe.
class MessageQueue {
 public:
  /// \brief Append `message`, waiting while the queue is full; dropped once closed.
  void Push(StreamMessage message);
  /// \brief Return the oldest message, or nullopt when none arrives within `timeout`.
  std::optional<StreamMessage> Pop(std::chrono::milliseconds timeout);
  /// \brief Release a Push waiting for space; later pushes are dropped.
  void Close();

 private:
  static constexpr size_t kCapacity = 8;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<StreamMessage> queue_;
  bool closed_ = false;
};

/// \brief Reads `stream` on its own thread until its end or failure (the last message).
/// Destroying it cancels the stream and joins the thread.
class StreamReader {
 public:
  explicit StreamReader(std::unique_ptr<amp::QueryStream> stream);
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  /// \brief Return the queue the messages arrive in.
  MessageQueue& queue() { return queue_; }

 private:
  std::unique_ptr<amp::QueryStream> stream_;
  MessageQueue queue_;
  std::thread thread_;
};

}  // namespace ampdelta::loader
