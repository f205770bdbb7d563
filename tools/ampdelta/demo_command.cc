// `ampdelta demo`: start the dev server in-process, load the seed's Quickstart query into
// ./data/blocks with the deltalake loader, then show the table as the seed's Polars example
// does and print its history.

#include <iostream>
#include <memory>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/delta/scan.h"
#include "ampdelta/delta/snapshot.h"
#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/loader/client.h"
#include "ampdelta/storage/object_store_registry.h"
#include "commands.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

constexpr const char* kQuickstartQuery =
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)";
constexpr const char* kTablePath = "./data/blocks";

arrow::Status ShowNewestRows() {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::OpenObjectStore(kTablePath));
  ARROW_ASSIGN_OR_RAISE(auto snapshot, delta::Snapshot::Load(store));
  delta::ScanOptions options;
  options.columns = {"block_num", "timestamp", "gas_used"};
  ARROW_ASSIGN_OR_RAISE(auto scan, delta::TableScan::Make(snapshot, options));
  ARROW_ASSIGN_OR_RAISE(auto table, scan->ToTable());
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  ARROW_ASSIGN_OR_RAISE(auto order,
                        arrow::compute::SortIndices(*batch->GetColumnByName("block_num"),
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
      if (rows != entry.commit_info->operation_metrics.end()) std::cout << "  rows=" << rows->second;
    }
    std::cout << "\n";
  }
  return arrow::Status::OK();
}

arrow::Status RunDemoSteps() {
  ARROW_ASSIGN_OR_RAISE(auto server, devserver::DevServer::Start(devserver::DevServerOptions{}));
  std::cout << "dev server: " << server->url() << " serving \"acme/eth_mainnet\" blocks "
            << server->chain()->first_block() << ".." << server->chain()->head() << "\n";

  Client client(server->url());
  ARROW_RETURN_NOT_OK(
      client.ConfigureConnection("local_delta", "deltalake", {{"table_path", kTablePath}}));
  std::cout << "query: " << kQuickstartQuery << "\n";
  loader::LoadOptions load;
  load.connection = "local_delta";
  load.destination = "blocks";
  load.read_all = true;
  // Overwrite: running the demo again replaces the rows (older versions stay readable).
  load.mode = "overwrite";
  const loader::LoadResult result = client.Sql(kQuickstartQuery).Load(load);
  std::cout << result << "\n";
  if (!result.success) return arrow::Status::IOError(result.error);
  ARROW_RETURN_NOT_OK(ShowNewestRows());
  return server->Shutdown();
}

int RunDemo() {
  arrow::Status status = RunDemoSteps();
  if (!status.ok()) {
    return Fail(status);
  }
  return kExitOk;
}

}  // namespace

CommandRunner AddDemoCommand(CLI::App& app) {
  app.add_subcommand("demo",
                     "Start the dev server in-process, load the Quickstart query into "
                     "./data/blocks and show the table");
  return [] { return RunDemo(); };
}

}  // namespace ampdelta::cli
