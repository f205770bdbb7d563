#pragma once

/// \file query_stream.h
/// \brief The result stream of one Amp query, apart from the client so the transports
/// that implement it need not include the client that opens them.

#include <memory>
#include <optional>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/amp/block_range.h"

namespace ampdelta::amp {

/// \brief One message from DoGet: a record batch (possibly 0 rows) and its metadata.
struct ResponseBatch {
  /// Never null; 0 rows for markers, keep-alives and metadata-only messages.
  std::shared_ptr<arrow::RecordBatch> data;
  /// Parsed `app_metadata`; empty ranges when the message carried none.
  BatchMetadata metadata;
  /// True when the message carried `app_metadata`.
  bool has_metadata = false;
  /// True when the message carried metadata but no record batch.
  bool metadata_only = false;
};

/// \brief The result stream of one query. Thread-compatible; Cancel() may be called from
/// another thread.
class QueryStream {
 public:
  virtual ~QueryStream() = default;

  /// \brief Return the result schema.
  virtual const std::shared_ptr<arrow::Schema>& schema() const = 0;

  /// \brief Return the next message, or std::nullopt at the end of the stream.
  ///
  /// Errors are kServerError (gRPC code and server message) or kProtocolError (malformed
  /// metadata).
  virtual arrow::Result<std::optional<ResponseBatch>> Next() = 0;

  /// \brief Ask the server to stop sending; a blocked Next() then returns an error or
  /// end.
  virtual void Cancel() = 0;
};

}  // namespace ampdelta::amp
