#include "ampdelta/storage/cloud_io.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

class RangedInputFile : public arrow::io::RandomAccessFile {
 public:
  RangedInputFile(RangeReader read, int64_t size) : read_(std::move(read)), size_(size) {}

  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> GetSize() override { return size_; }

  arrow::Result<int64_t> Tell() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return position_;
  }
  arrow::Status Seek(int64_t position) override {
    if (position < 0) return arrow::Status::Invalid("negative seek position ", position);
    std::lock_guard<std::mutex> lock(mutex_);
    position_ = position;
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position,
                                                       int64_t nbytes) override {
    if (position < 0 || nbytes < 0) {
      return arrow::Status::Invalid("invalid read of ", nbytes, " bytes at ", position);
    }
    nbytes = std::min(nbytes, std::max<int64_t>(0, size_ - position));
    if (nbytes == 0) return std::make_shared<arrow::Buffer>(nullptr, 0);
    ARROW_ASSIGN_OR_RAISE(auto buffer, read_(position, nbytes));
    if (buffer->size() != nbytes) {
      return arrow::Status::IOError("ranged read of ", nbytes, " bytes at ", position,
                                    " returned ", buffer->size(),
                                    " bytes (the object changed?)");
    }
    return buffer;
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, ReadAt(position, nbytes));
    const int64_t copied = std::min(buffer->size(), nbytes);
    if (copied > 0) std::memcpy(out, buffer->data(), static_cast<size_t>(copied));
    return copied;
  }

  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    int64_t position;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      position = position_;
    }
    ARROW_ASSIGN_OR_RAISE(auto buffer, ReadAt(position, nbytes));
    std::lock_guard<std::mutex> lock(mutex_);
    position_ = position + buffer->size();
    return buffer;
  }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, Read(nbytes));
    const int64_t copied = std::min(buffer->size(), nbytes);
    if (copied > 0) std::memcpy(out, buffer->data(), static_cast<size_t>(copied));
    return copied;
  }

 private:
  RangeReader read_;
  const int64_t size_;
  mutable std::mutex mutex_;
  int64_t position_ = 0;
  bool closed_ = false;
};

class MultipartOutputStream : public arrow::io::OutputStream {
 public:
  MultipartOutputStream(UploadFunctions upload, int64_t part_size)
      : upload_(std::move(upload)), part_size_(part_size) {}

  ~MultipartOutputStream() override {
    if (!closed_) (void)Abort();
  }

  arrow::Status Write(const void* data, int64_t nbytes) override {
    if (!failure_.ok()) return failure_;
    if (closed_) return arrow::Status::Invalid("write to a closed stream");
    const auto* bytes = static_cast<const uint8_t*>(data);
    while (nbytes > 0) {
      if (pending_ == nullptr) {
        ARROW_ASSIGN_OR_RAISE(pending_, arrow::AllocateResizableBuffer(0));
        pending_size_ = 0;
      }
      const int64_t take = std::min(nbytes, part_size_ - pending_size_);
      // Grow with the data, not to a whole part at once: a partitioned write keeps many
      // small files open.
      if (pending_size_ + take > pending_->capacity()) {
        ARROW_RETURN_NOT_OK(pending_->Reserve(std::min(
            part_size_, std::max(pending_size_ + take, 2 * pending_->capacity()))));
      }
      ARROW_RETURN_NOT_OK(pending_->Resize(pending_size_ + take, false));
      std::memcpy(pending_->mutable_data() + pending_size_, bytes,
                  static_cast<size_t>(take));
      pending_size_ += take;
      position_ += take;
      bytes += take;
      nbytes -= take;
      if (pending_size_ == part_size_) ARROW_RETURN_NOT_OK(FlushPart());
    }
    return arrow::Status::OK();
  }

  arrow::Status Close() override {
    // After a failed write the object must not appear, whatever the caller does next.
    if (!failure_.ok()) return failure_;
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    std::shared_ptr<arrow::Buffer> last = TakePending();
    if (multipart_ == nullptr) return upload_.put_whole(last);
    arrow::Status status = multipart_->Complete(last);
    if (!status.ok()) (void)multipart_->Abort();
    return status;
  }

  arrow::Status Abort() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    pending_.reset();
    return multipart_ == nullptr ? arrow::Status::OK() : multipart_->Abort();
  }

  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return position_; }

 private:
  std::shared_ptr<arrow::Buffer> TakePending() {
    if (pending_ == nullptr) return std::make_shared<arrow::Buffer>(nullptr, 0);
    std::shared_ptr<arrow::Buffer> part = arrow::SliceBuffer(
        std::shared_ptr<arrow::Buffer>(std::move(pending_)), 0, pending_size_);
    pending_size_ = 0;
    return part;
  }

  arrow::Status FlushPart() {
    arrow::Status status;
    if (multipart_ == nullptr) {
      auto started = upload_.start_multipart();
      if (started.ok()) {
        multipart_ = std::move(*started);
      } else {
        status = started.status();
      }
    }
    if (status.ok()) status = multipart_->UploadPart(TakePending());
    if (!status.ok()) {
      failure_ = status;
      pending_.reset();
      if (multipart_ != nullptr) (void)multipart_->Abort();
      closed_ = true;
    }
    return status;
  }

  UploadFunctions upload_;
  const int64_t part_size_;
  std::unique_ptr<MultipartUpload> multipart_;
  std::unique_ptr<arrow::ResizableBuffer> pending_;
  int64_t pending_size_ = 0;
  int64_t position_ = 0;
  bool closed_ = false;
  arrow::Status failure_;
};

int MonthIndex(const char* name) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (std::strncmp(name, kMonths[i], 3) == 0) return i;
  }
  return -1;
}

}  // namespace

std::shared_ptr<arrow::io::RandomAccessFile> MakeRangedInputFile(RangeReader read,
                                                                 int64_t size) {
  return std::make_shared<RangedInputFile>(std::move(read), size);
}

std::shared_ptr<arrow::io::OutputStream> MakeMultipartOutputStream(UploadFunctions upload,
                                                                   int64_t part_size) {
  return std::make_shared<MultipartOutputStream>(std::move(upload), part_size);
}

int64_t ParseHttpOrIsoTime(const std::string& text) {
  std::tm tm{};
  int millis = 0;
  char month[4] = {0};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0;
  if (std::sscanf(text.c_str(), "%*3s, %d %3s %d %d:%d:%d", &day, month, &year, &hour,
                  &minute, &second) == 6) {
    tm.tm_mon = MonthIndex(month);
    if (tm.tm_mon < 0) return 0;
  } else {
    int mon = 0;
    if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d", &year, &mon, &day, &hour, &minute,
                    &second) != 6) {
      return 0;
    }
    tm.tm_mon = mon - 1;
    const size_t dot = text.find('.');
    if (dot != std::string::npos) {
      int digits = 0;
      for (size_t i = dot + 1;
           i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) &&
           digits < 3;
           ++i, ++digits) {
        millis = millis * 10 + (text[i] - '0');
      }
      for (; digits < 3; ++digits) millis *= 10;
    }
  }
  tm.tm_year = year - 1900;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + millis;
}

}  // namespace ampdelta::storage
