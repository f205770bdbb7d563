#pragma once

/// \file coverage.h
/// \brief What a backfill plans on: the blocks the server has synced for a query, and
/// the query's schema, read by running it over no blocks (the Python package's Ray
/// driver fixes its range the same way).

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"

namespace ampdelta::loader {

/// \brief What the server says a query covers: its one network's synced blocks (a batch
/// query's ranges are the synced ranges of the tables it reads).
struct Coverage {
  std::string network;
  uint64_t first = 0;
  uint64_t head = 0;
  /// The query's result schema.
  std::shared_ptr<arrow::Schema> schema;
};

/// \brief Run `batch_sql` over no blocks of `column` (no rows: its schema and ranges),
/// retrying transient server failures per `config.retry`. kInvalidInput when the result
/// has no integer `column`, the server reports no synced blocks, or the query covers
/// more than one network.
arrow::Result<Coverage> ProbeCoverage(amp::Client& client, const std::string& batch_sql,
                                      const std::string& column,
                                      const DeltaLakeConfig& config,
                                      const LoadOptions& options);

}  // namespace ampdelta::loader
