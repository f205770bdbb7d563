#pragma once

/// \file cloud_io.h
/// \brief The pieces the S3, Azure and GCS stores share above their REST calls: random
/// access by ranged reads, streamed writes by multipart upload, and settling a
/// create-if-absent whose first reply was lost.

#include <functional>
#include <memory>
#include <string>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief Reads `length` bytes at `offset` of one object.
using RangeReader = std::function<arrow::Result<std::shared_ptr<arrow::Buffer>>(
    int64_t offset, int64_t length)>;

/// \brief Return a RandomAccessFile of `size` bytes served by ranged reads.
std::shared_ptr<arrow::io::RandomAccessFile> MakeRangedInputFile(RangeReader read,
                                                                 int64_t size);

/// \brief One provider's multipart upload of one object (S3 multipart, Azure blocks, GCS
/// resumable session). Parts arrive in order.
class MultipartUpload {
 public:
  virtual ~MultipartUpload() = default;
  /// \brief Upload one part that is not the last (its size is the stream's part size).
  virtual arrow::Status UploadPart(const std::shared_ptr<arrow::Buffer>& part) = 0;
  /// \brief Upload the last part (may be empty) and make the object visible, whole.
  virtual arrow::Status Complete(const std::shared_ptr<arrow::Buffer>& last_part) = 0;
  /// \brief Discard everything uploaded; the object never appears.
  virtual arrow::Status Abort() = 0;
};

/// \brief How a streamed object reaches the store.
struct UploadFunctions {
  /// Writes a whole small object in one request (used when the stream stays under one
  /// part).
  std::function<arrow::Status(const std::shared_ptr<arrow::Buffer>&)> put_whole;
  /// Starts a multipart upload (called when the first part fills).
  std::function<arrow::Result<std::unique_ptr<MultipartUpload>>()> start_multipart;
};

/// \brief Return an OutputStream that buffers `part_size` bytes at a time and uploads
/// them as parts; Close() completes the upload, Abort() or destruction without Close()
/// discards it, so an abandoned stream leaves nothing behind.
std::shared_ptr<arrow::io::OutputStream> MakeMultipartOutputStream(UploadFunctions upload,
                                                                   int64_t part_size);

/// \brief Parse an HTTP date (RFC 1123, `Tue, 15 Nov 1994 08:12:31 GMT`) or an RFC 3339
/// timestamp (`2024-05-01T12:00:00.123Z`) into milliseconds since the epoch; 0 if
/// neither.
int64_t ParseHttpOrIsoTime(const std::string& text);

}  // namespace ampdelta::storage
