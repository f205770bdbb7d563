#include "ampdelta/devserver/read_ahead.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/util/byte_size.h>

namespace ampdelta::devserver {
namespace {

// A piece's rows, or why there are none.
struct Piece {
  arrow::Status status;
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
};

class ReadAheadIterator : public BatchIterator {
 public:
  ReadAheadIterator(const Dataset& dataset, std::string table, ScanRange range,
                    BatchTransform transform, ReadAheadOptions options)
      : dataset_(dataset),
        table_(std::move(table)),
        range_(std::move(range)),
        transform_(std::move(transform)),
        parts_(dataset.ScanPieces(table_, range_, options.piece_blocks)),
        ahead_(static_cast<uint64_t>(std::max(options.threads, 1)) *
               static_cast<uint64_t>(std::max(options.pieces_per_thread, 1))),
        cache_(options.cache) {
    pieces_ = parts_.size();
    const int threads =
        static_cast<int>(std::min<uint64_t>(std::max(options.threads, 1), pieces_));
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  ~ReadAheadIterator() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    while (true) {
      if (position_ < current_.batches.size()) return current_.batches[position_++];
      if (next_out_ >= pieces_) return nullptr;
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return done_.count(next_out_) != 0; });
      current_ = std::move(done_.at(next_out_));
      done_.erase(next_out_);
      position_ = 0;
      ++next_out_;
      lock.unlock();
      changed_.notify_all();  // a worker may start the piece beyond the window now
      ARROW_RETURN_NOT_OK(current_.status);
    }
  }

 private:
  // Take the next piece within the window, make it, hand it over; until the end.
  void Work() {
    while (true) {
      uint64_t piece = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return stopping_ || next_in_ >= pieces_ || next_in_ < next_out_ + ahead_;
        });
        if (stopping_ || next_in_ >= pieces_) return;
        piece = next_in_++;
      }
      Piece made = Make(piece);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.emplace(piece, std::move(made));
      }
      changed_.notify_all();
    }
  }

  Piece Make(uint64_t piece) const {
    Piece out;
    if (cache_ != nullptr) {
      if (auto kept = cache_->Find(dataset_, table_, parts_[piece])) {
        for (const auto& batch : *kept) {
          auto transformed = transform_(batch);
          if (!transformed.ok()) {
            out.status = transformed.status();
            return out;
          }
          out.batches.push_back(std::move(*transformed));
        }
        return out;
      }
    }
    PieceCache::Batches made;
    auto scan = dataset_.Scan(table_, parts_[piece]);
    if (!scan.ok()) {
      out.status = scan.status();
      return out;
    }
    while (true) {
      auto batch = (*scan)->Next();
      if (!batch.ok()) {
        out.status = batch.status();
        return out;
      }
      if (*batch == nullptr) {
        if (cache_ != nullptr) cache_->Put(dataset_, table_, parts_[piece], made);
        return out;
      }
      if (cache_ != nullptr) made.push_back(*batch);
      auto transformed = transform_(*batch);
      if (!transformed.ok()) {
        out.status = transformed.status();
        return out;
      }
      out.batches.push_back(std::move(*transformed));
    }
  }

  const Dataset& dataset_;
  const std::string table_;
  const ScanRange range_;
  const BatchTransform transform_;
  const std::vector<ScanRange> parts_;
  const uint64_t ahead_;
  PieceCache* const cache_;
  uint64_t pieces_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t next_in_ = 0;   // the next piece a worker takes
  uint64_t next_out_ = 0;  // the next piece Next() hands out
  std::map<uint64_t, Piece> done_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;

  Piece current_;  // the piece Next() hands out, batch by batch
  size_t position_ = 0;
};

}  // namespace

PieceCache::Key PieceCache::KeyOf(const Dataset& dataset, const std::string& table,
                                  const ScanRange& piece) {
  return Key{&dataset, table, piece.range.start, piece.range.end,
             piece.view ? piece.view->version() : 0};
}

std::optional<PieceCache::Batches> PieceCache::Find(const Dataset& dataset,
                                                    const std::string& table,
                                                    const ScanRange& piece) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(KeyOf(dataset, table, piece));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void PieceCache::Put(const Dataset& dataset, const std::string& table,
                     const ScanRange& piece, const Batches& batches) {
  int64_t size = 0;
  for (const auto& batch : batches) size += arrow::util::TotalBufferSize(*batch);
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes_ + size > budget_bytes_) return;
  if (entries_.emplace(KeyOf(dataset, table, piece), batches).second) bytes_ += size;
}

int64_t PieceCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

std::unique_ptr<BatchIterator> ReadAhead(const Dataset& dataset, std::string table,
                                         ScanRange range, BatchTransform transform,
                                         ReadAheadOptions options) {
  return std::make_unique<ReadAheadIterator>(dataset, std::move(table), std::move(range),
                                             std::move(transform), options);
}

}  // namespace ampdelta::devserver
