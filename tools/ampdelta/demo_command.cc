// `ampdelta demo`: start the dev server in-process, load the seed's Quickstart query into
// ./data/blocks with the deltalake loader, then show the table as the seed's Polars
// example does and print its history.
//
// The demo only ever replaces a table it created: its version 0 is a CREATE TABLE commit
// whose operationParameters carry kDemoMarker. Anything else at ./data/blocks (someone's
// table, other files, a file) is left alone unless --overwrite is given.

#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

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

constexpr const char* kQuickstartQuery =
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)";
constexpr const char* kTablePath = "./data/blocks";
// operationParameters key of the demo's CREATE TABLE commit (version 0).
constexpr const char* kDemoMarker = "ampdelta.demo";

arrow::Status NotOurs(const std::string& what) {
  return InvalidInputError(
      kTablePath, " ", what,
      ": ampdelta demo replaces only a table it created; run it in another "
      "directory, or pass --overwrite to replace the table's rows");
}

// Return whether the demo must create its table first (nothing there yet), or an error
// when something the demo did not create is at ./data/blocks.
arrow::Result<bool> CheckTablePath(bool overwrite) {
  std::error_code error;
  const std::filesystem::path path(kTablePath);
  const auto status = std::filesystem::symlink_status(path, error);
  if (error || status.type() == std::filesystem::file_type::not_found) return true;
  if (overwrite) return false;
  if (!std::filesystem::is_directory(path, error))
    return NotOurs("exists and is not a directory");
  if (std::filesystem::is_empty(path, error) && !error) return true;
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(kTablePath));
  auto history = delta::ReadHistory(*store, 0);
  if (!history.ok() || history->empty()) {
    return NotOurs("holds files that are not a Delta table");
  }
  const delta::HistoryEntry& first = history->back();
  if (first.version != 0 || !first.commit_info ||
      first.commit_info->operation_parameters.count(kDemoMarker) == 0) {
    return NotOurs("holds a Delta table that ampdelta demo did not create");
  }
  return false;
}

// Version 0 of the demo's table: the Quickstart query's schema, no rows, the demo's mark.
arrow::Status CreateDemoTable(const std::string& server_url) {
  ARROW_ASSIGN_OR_RAISE(auto amp_client, amp::Client::Connect(server_url));
  ARROW_ASSIGN_OR_RAISE(auto schema, amp_client->GetSchema(kQuickstartQuery));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(kTablePath));
  delta::TableWriteOptions options;
  options.mode = delta::SaveMode::kErrorIfExists;
  options.operation = "CREATE TABLE";
  options.operation_parameters[kDemoMarker] = "true";
  options.description = "the Quickstart's blocks, written by ampdelta demo";
  ARROW_ASSIGN_OR_RAISE(auto writer, delta::TableWriter::Open(store, schema, options));
  return writer->Commit().status();
}

arrow::Status ShowNewestRows() {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(kTablePath));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  delta::ScanOptions options;
  options.columns = {"block_num", "timestamp", "gas_used"};
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

arrow::Status RunDemoSteps(bool overwrite) {
  ARROW_ASSIGN_OR_RAISE(const bool create, CheckTablePath(overwrite));
  ARROW_ASSIGN_OR_RAISE(auto server,
                        devserver::DevServer::Start(devserver::DevServerOptions{}));
  std::cout << "dev server: " << server->url() << " serving \"acme/eth_mainnet\" blocks "
            << server->chain()->first_block() << ".." << server->chain()->head() << "\n";

  if (create) ARROW_RETURN_NOT_OK(CreateDemoTable(server->url()));
  Client client(server->url());
  ARROW_RETURN_NOT_OK(client.ConfigureConnection("local_delta", "deltalake",
                                                 {{"table_path", kTablePath}}));
  std::cout << "query: " << kQuickstartQuery << "\n";
  loader::LoadOptions load;
  load.connection = "local_delta";
  load.destination = "blocks";
  load.read_all = true;
  // Overwrite: running the demo again replaces the rows (older versions stay readable).
  load.mode = loader::LoadMode::kOverwrite;
  const loader::LoadResult result = client.Sql(kQuickstartQuery).Load(load);
  std::cout << result << "\n";
  if (!result.success) {
    return result.status.ok() ? arrow::Status::IOError(result.error) : result.status;
  }
  ARROW_RETURN_NOT_OK(ShowNewestRows());
  return server->Shutdown();
}

int RunDemo(bool overwrite) {
  arrow::Status status = RunDemoSteps(overwrite);
  if (!status.ok()) {
    return Fail(status);
  }
  return kExitOk;
}

}  // namespace

CommandRunner AddDemoCommand(CLI::App& app) {
  auto overwrite = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("demo",
                         "Start the dev server in-process, load the Quickstart "
                         "query into ./data/blocks and show the table");
  cmd->add_flag("--overwrite", *overwrite,
                "replace the rows of a ./data/blocks the demo did not create");
  return [overwrite] { return RunDemo(*overwrite); };
}

}  // namespace ampdelta::cli
