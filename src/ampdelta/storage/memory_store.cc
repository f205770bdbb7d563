#include "ampdelta/storage/memory_store.h"

#include <algorithm>
#include <chrono>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>

#include "ampdelta/util/clock.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

// Buffers writes and stores the object on Close().
class MemoryOutputStream : public arrow::io::OutputStream {
 public:
  MemoryOutputStream(MemoryStore* store, std::string path,
                     std::shared_ptr<arrow::io::BufferOutputStream> buffer)
      : store_(store), path_(std::move(path)), buffer_(std::move(buffer)) {}

  arrow::Status Close() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    ARROW_ASSIGN_OR_RAISE(auto data, buffer_->Finish());
    return store_->Put(path_, data, PutMode::kOverwrite);
  }
  arrow::Status Abort() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return buffer_->Tell(); }
  arrow::Status Write(const void* data, int64_t nbytes) override {
    return buffer_->Write(data, nbytes);
  }
  arrow::Status Write(const std::shared_ptr<arrow::Buffer>& data) override {
    return buffer_->Write(data);
  }

 private:
  MemoryStore* store_;
  std::string path_;
  std::shared_ptr<arrow::io::BufferOutputStream> buffer_;
  bool closed_ = false;
};

}  // namespace

arrow::Result<ObjectMeta> MemoryStore::Head(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(path);
  if (it == objects_.end())
    return NotFoundError("object not found: ", root_uri(), "/", path);
  return ObjectMeta{path, it->second.data->size(), it->second.last_modified_ms};
}

arrow::Result<std::shared_ptr<arrow::Buffer>> MemoryStore::Get(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(path);
  if (it == objects_.end())
    return NotFoundError("object not found: ", root_uri(), "/", path);
  return it->second.data;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> MemoryStore::GetRange(
    const std::string& path, int64_t offset, int64_t length) {
  ARROW_ASSIGN_OR_RAISE(auto data, Get(path));
  if (offset < 0 || length < 0)
    return arrow::Status::Invalid("negative range for ", path);
  offset = std::min(offset, data->size());
  length = std::min(length, data->size() - offset);
  return arrow::SliceBuffer(data, offset, length);
}

arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> MemoryStore::OpenInputFile(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto data, Get(path));
  return std::make_shared<arrow::io::BufferReader>(data);
}

arrow::Result<std::vector<ObjectMeta>> MemoryStore::List(const std::string& prefix,
                                                         const std::string& start_after) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ObjectMeta> out;
  for (auto it = objects_.lower_bound(prefix); it != objects_.end(); ++it) {
    if (it->first.rfind(prefix, 0) != 0) break;
    if (it->first <= start_after) continue;
    out.push_back(
        ObjectMeta{it->first, it->second.data->size(), it->second.last_modified_ms});
  }
  return out;
}

arrow::Status MemoryStore::Put(const std::string& path,
                               const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  if (path.empty() || path.front() == '/') {
    return arrow::Status::Invalid("object key must be a relative path: '", path, "'");
  }
  // Copy: the caller may reuse its buffer.
  ARROW_ASSIGN_OR_RAISE(auto copy, arrow::AllocateBuffer(data->size()));
  std::copy(data->data(), data->data() + data->size(), copy->mutable_data());
  std::lock_guard<std::mutex> lock(mutex_);
  if (mode == PutMode::kCreateIfAbsent && objects_.count(path) != 0) {
    return MakeError(ErrorCode::kPreconditionFailed, arrow::StatusCode::AlreadyExists,
                     "object already exists: ", root_uri(), "/", path);
  }
  objects_[path] = Object{std::shared_ptr<arrow::Buffer>(std::move(copy)), NowMs()};
  return arrow::Status::OK();
}

arrow::Status MemoryStore::Delete(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  objects_.erase(path);
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::io::OutputStream>> MemoryStore::OpenOutputStream(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::io::BufferOutputStream::Create());
  return std::make_shared<MemoryOutputStream>(this, path, std::move(buffer));
}

}  // namespace ampdelta::storage
