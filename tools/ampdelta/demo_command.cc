// `ampdelta demo`: start the dev server in-process and run the Quickstart query on it.

#include <iostream>
#include <memory>
#include <numeric>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/devserver/dev_server.h"
#include "commands.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

constexpr const char* kQuickstartQuery =
    R"(SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks)";

arrow::Status RunDemoSteps() {
  devserver::DevServerOptions options;
  ARROW_ASSIGN_OR_RAISE(auto server, devserver::DevServer::Start(options));
  std::cout << "dev server: " << server->url() << " serving \"acme/eth_mainnet\" blocks "
            << server->chain()->first_block() << ".." << server->chain()->head() << "\n";
  std::cout << "query: " << kQuickstartQuery << "\n";

  ARROW_ASSIGN_OR_RAISE(auto client, amp::Client::Connect(server->url()));
  ARROW_ASSIGN_OR_RAISE(auto stream, client->Query(kQuickstartQuery));
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  amp::BatchMetadata last_metadata;
  int64_t messages = 0;
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto message, stream->Next());
    if (!message) break;
    ++messages;
    if (message->has_metadata) last_metadata = message->metadata;
    if (message->data->num_rows() > 0) batches.push_back(message->data);
  }
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(stream->schema(), batches));
  ARROW_ASSIGN_OR_RAISE(auto combined, table->CombineChunksToBatch());
  std::cout << "received " << combined->num_rows() << " rows in " << messages
            << " Flight messages; ranges_complete="
            << (last_metadata.ranges_complete ? "true" : "false");
  for (const auto& range : last_metadata.ranges) {
    std::cout << " range=" << range.ToString() << " hash=" << range.hash;
  }
  std::cout << "\n";
  // The three newest blocks, as the seed's Polars example shows them.
  ARROW_ASSIGN_OR_RAISE(
      auto order, arrow::compute::SortIndices(*combined->GetColumnByName("block_num"),
                                              arrow::compute::SortOrder::Descending));
  const auto& indices = static_cast<const arrow::UInt64Array&>(*order);
  std::vector<int64_t> newest;
  for (int64_t i = 0; i < std::min<int64_t>(3, indices.length()); ++i) {
    newest.push_back(static_cast<int64_t>(indices.Value(i)));
  }
  std::cout << FormatTable(combined->schema(), FormatRows(*combined, newest));
  return server->Shutdown();
}

int RunDemo() {
  arrow::Status status = RunDemoSteps();
  if (!status.ok()) {
    PrintError(status.ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

CommandRunner AddDemoCommand(CLI::App& app) {
  app.add_subcommand("demo",
                     "Start the dev server in-process and run the Quickstart query on it");
  return [] { return RunDemo(); };
}

}  // namespace ampdelta::cli
