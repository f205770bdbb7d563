#pragma once

/// \file batch_loader.h
/// \brief Run a batch query on Amp and load its result into a Delta table as one commit:
/// data files stream out as batches arrive, readers see the whole load or nothing.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <arrow/result.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/config.h"
#include "ampdelta/loader/load_result.h"

namespace ampdelta::loader {

/// \brief Per-load options (the Python SDK's load() keywords).
struct LoadOptions {
  /// The configured connection to load into (Client::Sql(…).Load only).
  std::string connection;
  /// Names the load in results and logs; `table_path` decides where data goes.
  std::string destination;
  /// append, overwrite, error or ignore.
  std::string mode = "append";
  /// Only changes how the result is reported: memory use is bounded either way.
  bool read_all = false;
  /// Parquet codec (`writer_properties` compression) and level.
  std::string compression = "zstd";
  std::optional<int> compression_level;
  /// Called after each batch with the running totals (rows, bytes of Arrow data).
  std::function<void(int64_t rows, int64_t bytes)> progress;
};

/// \brief Load the result of `sql` into the configured table. Never throws; failures
/// come back as a LoadResult with success=false and the table left as it was.
LoadResult LoadBatch(amp::Client& client, const std::string& sql,
                     const DeltaLakeConfig& config, const LoadOptions& options);

}  // namespace ampdelta::loader
