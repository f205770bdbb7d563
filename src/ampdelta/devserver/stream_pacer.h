#pragma once

/// \file stream_pacer.h
/// \brief Which open streams have been sent everything their dataset holds, so that a
/// live chain can wait for its readers (LiveOptions::await_streams).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ampdelta::devserver {

class Dataset;

/// \brief Knows, for each open stream, the dataset change it has sent everything of. A
/// chain that adds a block only when every open stream has sent all of its current change
/// makes a slow reader meet every reorg, instead of catching up after the chain has
/// settled and never seeing one. Thread-safe.
class StreamPacer {
 public:
  /// \brief One open stream's place in the pacer; leaves it when destroyed.
  class Stream {
   public:
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    /// \brief The stream has sent all that `dataset` held at `change` and waits for more.
    void WaitingAt(const Dataset* dataset, uint64_t change);
    /// \brief The stream has something to send again.
    void Sending();

   private:
    friend class StreamPacer;
    explicit Stream(StreamPacer* pacer) : pacer_(pacer) {}

    StreamPacer* pacer_;
    // Guarded by pacer_->mutex_.
    const Dataset* dataset_ = nullptr;
    std::optional<uint64_t> waiting_at_;
  };

  /// \brief Add a newly opened stream, not yet waiting.
  std::unique_ptr<Stream> Open();

  /// \brief Return true when a stream is open and every open stream waits: those on
  /// `chain` having sent all of its change `change` (one waiting at an older change has
  /// yet to send what changed since), those on other datasets having sent all there is.
  bool AllWaitingAt(const Dataset* chain, uint64_t change) const;

 private:
  mutable std::mutex mutex_;
  std::vector<const Stream*> streams_;
};

}  // namespace ampdelta::devserver
