#pragma once

/// \file query_reader.h
/// \brief A batch query's result as an arrow::RecordBatchReader, for `to_arrow()` and
/// `to_reader()` (exported to pyarrow through the Arrow C stream interface).

#include <memory>
#include <string>

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "ampdelta/amp/client.h"

namespace ampdelta::python {

/// \brief Connect to `url`, start `sql` as a batch query and return its rows; the reader
/// owns the connection. A streaming query (`SETTINGS stream = true`) is refused: it never
/// ends.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> OpenQueryReader(
    const std::string& url, const amp::ClientOptions& options, const std::string& sql);

}  // namespace ampdelta::python
