// `ampdelta demo`: start the dev server in-process, load the seed's Quickstart query into
// ./data/blocks with the deltalake loader, then show the table as the seed's Polars
// example does and print its history. `ampdelta demo --events` does the same with decoded
// Uniswap V3 swaps (Amp's evm_decode_log) into ./data/swaps.
//
// The demo only ever replaces a table it created: its version 0 is a CREATE TABLE commit
// whose operationParameters carry kDemoMarker. Anything else at ./data/blocks (someone's
// table, other files, a file) is left alone unless --overwrite is given.

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/delta/read/scan.h"
#include "ampdelta/delta/write/table_writer.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/client/client.h"
#include "ampdelta/storage/object_store_registry.h"
#include "commands.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

// operationParameters key of the demo's CREATE TABLE commit (version 0).
constexpr const char* kDemoMarker = "ampdelta.demo";

// What one demo loads and shows.
struct Demo {
  const char* query;
  const char* table_path;
  const char* destination;
  const char* description;
  std::vector<std::string> shown_columns;
};

const Demo kBlocksDemo = {
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)",
    "./data/blocks",
    "blocks",
    "the Quickstart's blocks, written by ampdelta demo",
    {"block_num", "timestamp", "gas_used"}};

const Demo kEventsDemo = {
    R"(SELECT block_num, log_index, address,
       evm_decode_log(topic1, topic2, topic3, data,
         'Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)') AS swap
FROM "acme/eth_mainnet".logs
WHERE topic0 = evm_topic('Swap(address,address,int256,int256,uint160,uint128,int24)'))",
    "./data/swaps",
    "swaps",
    "Uniswap V3 swaps decoded by evm_decode_log, written by ampdelta demo --events",
    {"block_num", "log_index", "swap"}};

arrow::Status NotOurs(const Demo& demo, const std::string& what) {
  return InvalidInputError(
      demo.table_path, " ", what,
      ": ampdelta demo replaces only a table it created; run it in another "
      "directory, or pass --overwrite to replace the table's rows");
}

// Return whether the demo must create its table first (nothing there yet), or an error
// when something the demo did not create is at its path.
arrow::Result<bool> CheckTablePath(const Demo& demo, bool overwrite) {
  std::error_code error;
  const std::filesystem::path path(demo.table_path);
  const auto status = std::filesystem::symlink_status(path, error);
  if (error || status.type() == std::filesystem::file_type::not_found) return true;
  if (overwrite) return false;
  if (!std::filesystem::is_directory(path, error))
    return NotOurs(demo, "exists and is not a directory");
  if (std::filesystem::is_empty(path, error) && !error) return true;
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(demo.table_path));
  auto history = delta::ReadHistory(*store, 0);
  if (!history.ok() || history->empty()) {
    return NotOurs(demo, "holds files that are not a Delta table");
  }
  const delta::HistoryEntry& first = history->back();
  if (first.version != 0 || !first.commit_info ||
      first.commit_info->operation_parameters.count(kDemoMarker) == 0) {
    return NotOurs(demo, "holds a Delta table that ampdelta demo did not create");
  }
  return false;
}

// Version 0 of the demo's table: the query's schema, no rows, the demo's mark.
arrow::Status CreateDemoTable(const Demo& demo, const std::string& server_url) {
  ARROW_ASSIGN_OR_RAISE(auto amp_client, amp::Client::Connect(server_url));
  ARROW_ASSIGN_OR_RAISE(auto schema, amp_client->GetSchema(demo.query));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(demo.table_path));
  delta::TableWriteOptions options;
  options.mode = delta::SaveMode::kErrorIfExists;
  options.operation = "CREATE TABLE";
  options.operation_parameters[kDemoMarker] = "true";
  options.description = demo.description;
  ARROW_ASSIGN_OR_RAISE(auto writer, delta::TableWriter::Open(store, schema, options));
  return writer->Commit().status();
}

arrow::Status ShowNewestRows(const Demo& demo) {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(demo.table_path));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  delta::ScanOptions options;
  options.columns = demo.shown_columns;
  ARROW_ASSIGN_OR_RAISE(auto scan, delta::TableScan::Make(snapshot, options));
  ARROW_ASSIGN_OR_RAISE(auto table, scan->ToTable());
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  ARROW_ASSIGN_OR_RAISE(
      auto order, arrow::compute::SortIndices(*batch->GetColumnByName("block_num"),
                                              arrow::compute::SortOrder::Descending));
  const auto& indices = static_cast<const arrow::UInt64Array&>(*order);
  std::vector<int64_t> newest;
  for (int64_t i = 0; i < std::min<int64_t>(3, indices.length()); ++i) {
    newest.push_back(static_cast<int64_t>(indices.Value(i)));
  }
  std::cout << "\nThe three newest rows (version " << snapshot->version() << "):\n"
            << FormatTable(batch->schema(), FormatRows(*batch, newest));
  ARROW_ASSIGN_OR_RAISE(auto history, delta::ReadHistory(*store, 10));
  std::cout << "\nHistory:\n";
  for (const auto& entry : history) {
    std::cout << "  version " << entry.version;
    if (entry.commit_info) {
      std::cout << "  " << entry.commit_info->operation;
      auto rows = entry.commit_info->operation_metrics.find("numOutputRows");
      if (rows != entry.commit_info->operation_metrics.end())
        std::cout << "  rows=" << rows->second;
    }
    std::cout << "\n";
  }
  return arrow::Status::OK();
}

arrow::Status RunDemoSteps(const Demo& demo, bool overwrite) {
  ARROW_ASSIGN_OR_RAISE(const bool create, CheckTablePath(demo, overwrite));
  ARROW_ASSIGN_OR_RAISE(auto server,
                        devserver::DevServer::Start(devserver::DevServerOptions{}));
  std::cout << "dev server: " << server->url() << " serving \"acme/eth_mainnet\" blocks "
            << server->chain()->first_block() << ".." << server->chain()->head() << "\n";

  if (create) ARROW_RETURN_NOT_OK(CreateDemoTable(demo, server->url()));
  Client client(server->url());
  ARROW_RETURN_NOT_OK(client.ConfigureConnection("local_delta", "deltalake",
                                                 {{"table_path", demo.table_path}}));
  std::cout << "query: " << demo.query << "\n";
  loader::LoadOptions load;
  load.connection = "local_delta";
  load.destination = demo.destination;
  load.read_all = true;
  // Overwrite: running the demo again replaces the rows (older versions stay readable).
  load.mode = loader::LoadMode::kOverwrite;
  const loader::LoadResult result = client.Sql(demo.query).Load(load);
  std::cout << result << "\n";
  if (!result.success) {
    return result.status.ok() ? arrow::Status::IOError(result.error) : result.status;
  }
  ARROW_RETURN_NOT_OK(ShowNewestRows(demo));
  return server->Shutdown();
}

int RunDemo(bool events, bool overwrite) {
  arrow::Status status = RunDemoSteps(events ? kEventsDemo : kBlocksDemo, overwrite);
  if (!status.ok()) {
    return Fail(status);
  }
  return kExitOk;
}

}  // namespace

CommandRunner AddDemoCommand(CLI::App& app) {
  auto overwrite = std::make_shared<bool>(false);
  auto events = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("demo",
                         "Start the dev server in-process, load the Quickstart "
                         "query into ./data/blocks and show the table");
  cmd->add_flag("--overwrite", *overwrite,
                "replace the rows of a table the demo did not create");
  cmd->add_flag("--events", *events,
                "load decoded Uniswap V3 swaps (Amp's evm_decode_log) into ./data/swaps");
  return [events, overwrite] { return RunDemo(*events, *overwrite); };
}

}  // namespace ampdelta::cli
