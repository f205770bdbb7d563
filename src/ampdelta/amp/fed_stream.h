#pragma once

/// \file fed_stream.h
/// \brief A query stream whose messages the caller hands over, and a Client that serves
/// it: how the engine loads a stream another program reads from the server (the Python
/// SDK's `load_stream_continuous` gets its batches from the SDK's own Flight client). The
/// engine then sees the messages as if it had read them itself: block ranges, microbatch
/// ends, reorgs.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <arrow/result.h>

#include "ampdelta/amp/client.h"

namespace ampdelta::amp {

/// \brief Messages from a producer to one reader, bounded so a slow load holds the
/// producer back. Thread-safe.
class FedChannel {
 public:
  /// \brief A channel for messages of `schema`, at most `capacity` (2 or more)
  /// waiting.
  explicit FedChannel(std::shared_ptr<arrow::Schema> schema, size_t capacity = 4);

  /// \brief Queue `message`, waiting up to `timeout` for room: true when queued, false on
  /// the timeout; an error once the reader cancelled or the channel was closed, or for a
  /// message of another schema.
  /// `message` is copied in only when queued, so the caller may push it again.
  arrow::Result<bool> Push(const ResponseBatch& message,
                           std::chrono::milliseconds timeout);
  /// \brief The producer has no more messages: the reader sees the stream's end.
  void Close();
  /// \brief The producer failed: the reader sees `status` after the queued messages.
  void Fail(arrow::Status status);

  /// \brief The next message (waits for it), nullopt at the end, or the producer's
  /// failure, or Cancelled once the reader cancelled.
  arrow::Result<std::optional<ResponseBatch>> Pop();
  /// \brief The reader is done: pending and later pushes fail.
  void Cancel();

  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }

 private:
  const std::shared_ptr<arrow::Schema> schema_;
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ResponseBatch> queue_;
  bool closed_ = false;
  bool cancelled_ = false;
  arrow::Status failure_;
};

/// \brief A Client whose one query is the channel's stream. The stream cannot be read
/// again from its start, so a second query (a reconnect) fails, naming why.
class FedClient : public Client {
 public:
  /// \param label the client's "URL" in telemetry and errors
  FedClient(std::shared_ptr<FedChannel> channel, std::string label);

  arrow::Result<std::unique_ptr<QueryStream>> Query(const std::string& sql,
                                                    const QueryOptions& options) override;
  arrow::Result<std::shared_ptr<arrow::Schema>> GetSchema(
      const std::string& sql, const QueryOptions& options) override;
  const std::string& url() const override { return label_; }

 private:
  std::shared_ptr<FedChannel> channel_;
  std::string label_;
  bool queried_ = false;
};

}  // namespace ampdelta::amp
