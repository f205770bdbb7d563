#pragma once

/// \file stream_pacer.h
/// \brief Which open streams have been sent everything their dataset holds, so that a
/// live chain can wait for its readers (LiveOptions::await_streams).

#include <memory>
#include <mutex>

namespace ampdelta::devserver {

/// \brief Counts the open streams and those waiting for new blocks. A chain that adds a
/// block only when every open stream waits makes a slow reader meet every reorg, instead
/// of catching up after the chain has settled and never seeing one. Thread-safe.
class StreamPacer {
 public:
  /// \brief One open stream's place in the count; leaves it when destroyed.
  class Stream {
   public:
    explicit Stream(StreamPacer* pacer) : pacer_(pacer) {}
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    /// \brief Say whether the stream has sent all there is and waits for the chain.
    void SetWaiting(bool waiting);

   private:
    StreamPacer* pacer_;
    bool waiting_ = false;
  };

  /// \brief Count a newly opened stream, not yet waiting.
  std::unique_ptr<Stream> Open();

  /// \brief Return true when a stream is open and every open stream waits for new blocks.
  bool AllWaiting() const;

 private:
  mutable std::mutex mutex_;
  int open_ = 0;
  int waiting_ = 0;
};

}  // namespace ampdelta::devserver
