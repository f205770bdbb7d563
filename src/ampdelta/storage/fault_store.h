#pragma once

/// \file fault_store.h
/// \brief A decorator that injects storage failures, for tests and chaos runs.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief The calls a fault can target.
enum class StoreOp : uint8_t {
  kHead,
  kGet,
  kList,
  kPut,
  kDelete,
  kOpenOutputStream,
  kOpenInputFile,
};

/// \brief One injected fault.
struct FaultRule {
  StoreOp op = StoreOp::kPut;
  /// Only calls whose key contains this substring count (empty: every key).
  std::string path_contains;
  /// Fail the Nth matching call (1-based); 0 fails every matching call.
  int64_t nth = 1;
  /// Perform the operation, then report failure: the reply was lost after the write
  /// succeeded (the hardest case for a committer).
  bool lose_reply = false;
  /// The error returned.
  std::string message = "injected fault";
  /// Called when the rule fires, before the call goes on (outside the store's lock): a
  /// concurrent writer's commit, a crash point. With `fail` false the call then proceeds.
  std::function<void()> before;
  bool fail = true;
  /// Fail as a missing object (ErrorCode::kNotFound) instead of an IOError: a read-back
  /// that misses a write still in flight.
  bool not_found = false;
  /// The kStorageError subcode of the error: `transport` (transient, retried) by default;
  /// an errno name such as `ENOSPC` or `EROFS` makes it permanent.
  std::string subcode = "transport";
};

/// \brief Wraps another store; calls pass through unless a rule fires. Thread-safe.
class FaultStore : public ObjectStore {
 public:
  explicit FaultStore(std::shared_ptr<ObjectStore> inner) : inner_(std::move(inner)) {}

  /// \brief Add a rule; rules are checked in the order they were added.
  void AddRule(FaultRule rule);
  /// \brief Remove every rule.
  void ClearRules();
  /// \brief Return how many calls of `op` were made so far.
  int64_t calls(StoreOp op) const;
  /// \brief Return how many faults fired so far.
  int64_t faults_fired() const { return fired_.load(); }

  std::string root_uri() const override { return inner_->root_uri(); }
  bool is_file_system() const override { return inner_->is_file_system(); }
  std::optional<std::string> KeyOf(const std::string& location) const override {
    return inner_->KeyOf(location);
  }
  arrow::Result<ObjectMeta> Head(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> GetRange(const std::string& path,
                                                         int64_t offset,
                                                         int64_t length) override;
  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(
      const std::string& path) override;
  arrow::Result<std::vector<ObjectMeta>> List(const std::string& prefix,
                                              const std::string& start_after) override;
  arrow::Status Put(const std::string& path, const std::shared_ptr<arrow::Buffer>& data,
                    PutMode mode) override;
  arrow::Status Delete(const std::string& path) override;
  void RemoveFolderIfEmpty(const std::string& path) override {
    inner_->RemoveFolderIfEmpty(path);
  }
  arrow::Result<std::shared_ptr<arrow::io::OutputStream>> OpenOutputStream(
      const std::string& path) override;
  arrow::Result<std::vector<StagingObject>> ListStaging(
      const std::string& prefix) override {
    return inner_->ListStaging(prefix);
  }

 private:
  struct Decision {
    bool fail = false;
    bool lose_reply = false;
    std::string message;
    bool not_found = false;
    std::string subcode;
  };
  Decision Check(StoreOp op, const std::string& path);

  std::shared_ptr<ObjectStore> inner_;
  mutable std::mutex mutex_;
  struct ActiveRule {
    FaultRule rule;
    int64_t matched = 0;
  };
  std::vector<ActiveRule> rules_;
  int64_t calls_[7] = {};
  std::atomic<int64_t> fired_{0};
};

}  // namespace ampdelta::storage
