#pragma once

/// \file memory_store.h
/// \brief ObjectStore in memory, for tests and dry runs.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief Objects kept in a map. Thread-safe; create-if-absent is atomic under its lock.
class MemoryStore : public ObjectStore {
 public:
  /// \param[in] name shown in root_uri() as `memory://<name>`
  explicit MemoryStore(std::string name = "store") : name_(std::move(name)) {}

  std::string root_uri() const override { return "memory://" + name_; }
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
  arrow::Result<std::shared_ptr<arrow::io::OutputStream>> OpenOutputStream(
      const std::string& path) override;

 private:
  struct Object {
    std::shared_ptr<arrow::Buffer> data;
    int64_t last_modified_ms = 0;
  };

  std::string name_;
  std::mutex mutex_;
  std::map<std::string, Object> objects_;
};

}  // namespace ampdelta::storage
