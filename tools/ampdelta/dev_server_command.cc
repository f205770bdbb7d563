// `ampdelta dev-server`: run the Amp-compatible development server until SIGINT/SIGTERM.

#include <csignal>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <thread>

#include "ampdelta/devserver/dev_server.h"
#include "ampdelta/util/numbers.h"
#include "commands.h"

namespace ampdelta::cli {
namespace {

struct DevServerArgs {
  devserver::DevServerOptions options;
  uint64_t block_interval_ms = 0;
  uint64_t keepalive_interval_ms = 30000;
  uint64_t cache_mib = 0;
  std::vector<std::string> reorg_at;
  std::vector<std::string> datasets;
  bool no_synthetic = false;
  std::string token;
};

bool ParseReorgAt(const std::string& text, uint64_t* block, uint64_t* depth) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  const auto parsed_block = ParseUint64(std::string_view(text).substr(0, colon));
  const auto parsed_depth = ParseUint64(std::string_view(text).substr(colon + 1));
  if (!parsed_block || !parsed_depth) return false;
  *block = *parsed_block;
  *depth = *parsed_depth;
  return *depth > 0;
}

int RunDevServer(DevServerArgs& args) {
  devserver::DevServerOptions& options = args.options;
  options.serve_synthetic = !args.no_synthetic;
  options.live.block_interval = std::chrono::milliseconds(args.block_interval_ms);
  options.stream.keepalive_interval =
      std::chrono::milliseconds(args.keepalive_interval_ms);
  if (args.cache_mib > (uint64_t{1} << 40)) {
    PrintError("--cache-mib " + std::to_string(args.cache_mib) + " is too large");
    return kExitUsage;
  }
  options.stream.cache_bytes = static_cast<int64_t>(args.cache_mib) << 20;
  for (const auto& item : args.reorg_at) {
    uint64_t block = 0;
    uint64_t depth = 0;
    if (!ParseReorgAt(item, &block, &depth)) {
      PrintError("--reorg-at expects BLOCK:DEPTH with DEPTH >= 1, got '" + item + "'");
      return kExitUsage;
    }
    options.live.reorg_at[block] = depth;
  }
  for (const auto& item : args.datasets) {
    const size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == item.size()) {
      PrintError("--dataset expects NAME=DIR, got '" + item + "'");
      return kExitUsage;
    }
    const std::string dir = item.substr(equals + 1);
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) {
      PrintError("--dataset " + item + ": '" + dir + "' is not a directory");
      return kExitUsage;
    }
    options.parquet_datasets.emplace_back(item.substr(0, equals), dir);
  }
  if (!args.token.empty()) options.required_token = args.token;

  // Block the stop signals before any server thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = devserver::DevServer::Start(options);
  if (!server.ok()) {
    PrintError("dev-server failed to start: " + server.status().ToString());
    return kExitFailure;
  }
  std::cout << "ampdelta dev-server listening on " << (*server)->url() << std::endl;
  if ((*server)->chain() != nullptr) {
    const auto* chain = (*server)->chain();
    std::cerr << "serving \"" << chain->name() << "\" (network " << chain->network()
              << ") blocks " << chain->first_block() << ".." << chain->head()
              << std::endl;
  }
  int received = 0;
  sigwait(&signals, &received);
  std::cerr << "stopping dev-server (signal " << received << ")" << std::endl;
  arrow::Status status = (*server)->Shutdown();
  if (!status.ok()) {
    PrintError(status.ToString());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

CommandRunner AddDevServerCommand(CLI::App& app) {
  auto args = std::make_shared<DevServerArgs>();
  auto& options = args->options;
  CLI::App* cmd = app.add_subcommand(
      "dev-server",
      "Run an Amp-compatible Flight server over a synthetic chain or Parquet");
  cmd->add_option("--host", options.host, "address to bind")->capture_default_str();
  cmd->add_option("--port", options.port, "port to bind (0 picks a free one)")
      ->check(IntegerIn(0, 65535))
      ->default_val(1602)
      ->capture_default_str();
  cmd->add_option("--start-block", options.chain.start_block, "first block of the chain")
      ->check(UnsignedAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--blocks", options.chain.initial_blocks, "blocks that exist at start")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--txs-per-block", options.chain.transactions_per_block,
                  "transactions per block")
      ->check(UnsignedAtLeast(0, std::numeric_limits<uint32_t>::max()))
      ->capture_default_str();
  cmd->add_option("--logs-per-tx", options.chain.logs_per_transaction,
                  "logs per transaction")
      ->check(UnsignedAtLeast(0, std::numeric_limits<uint32_t>::max()))
      ->capture_default_str();
  cmd->add_option("--seed", options.chain.seed, "seed of every hash and value")
      ->check(UnsignedAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--dataset-name", options.chain.dataset,
                  "name of the synthetic dataset")
      ->capture_default_str();
  cmd->add_option("--network", options.chain.network, "network of the synthetic dataset")
      ->capture_default_str();
  cmd->add_option("--block-interval-ms", args->block_interval_ms,
                  "add a block every N ms (0: the chain stays still)")
      ->check(UnsignedAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--max-head", options.live.max_head, "stop adding blocks at this head")
      ->check(UnsignedAtLeast(0));
  cmd->add_option("--reorg-every", options.live.reorg_every,
                  "reorg after every N new blocks")
      ->check(UnsignedAtLeast(0));
  cmd->add_option("--reorg-depth", options.live.reorg_depth,
                  "depth of --reorg-every reorgs")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  cmd->add_flag(
      "--await-streams", options.live.await_streams,
      "add a block only when a stream is open and has been sent the whole chain, "
      "so a slow reader still meets every reorg (tests)");
  cmd->add_option("--reorg-at", args->reorg_at,
                  "BLOCK:DEPTH: when the head reaches BLOCK, replace DEPTH blocks");
  cmd->add_option("--batch-rows", options.stream.batch_rows,
                  "rows per record batch (ampd: DataFusion's 8192)")
      ->check(IntegerAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--scan-threads", options.stream.scan_threads,
                  "threads making a query's rows ahead of the client (0: one per core, "
                  "at most 8)")
      ->check(IntegerAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--scan-piece-blocks", options.stream.scan_piece_blocks,
                  "blocks each scan thread makes at a time")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--cache-mib", args->cache_mib,
                  "keep up to this many MiB of made rows and serve repeated queries from "
                  "memory (benchmarks; 0: none)")
      ->check(UnsignedAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--microbatch-max-blocks", options.stream.max_microbatch_blocks,
                  "largest streaming microbatch in blocks")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  // As ampd by default: the schema with the first microbatch, a keep-alive opening each.
  cmd->add_flag("--keepalives", options.stream.keepalive_at_microbatch_start,
                "send a 0-row keep-alive batch at each microbatch start (the default)");
  cmd->add_flag("--no-keepalives{false}", options.stream.keepalive_at_microbatch_start,
                "send no keep-alive batches");
  cmd->add_option("--keepalive-interval-ms", args->keepalive_interval_ms,
                  "repeat the keep-alive while a microbatch runs this long (ampd: 30 s)")
      ->check(UnsignedAtLeast(1))
      ->capture_default_str();
  cmd->add_flag("--early-schema{false}", options.stream.schema_with_first_microbatch,
                "streams: send the schema at once instead of with the first microbatch");
  cmd->add_option("--fail-after-microbatches", options.stream.fail_after_microbatches,
                  "fail every stream with INTERNAL after N microbatches (tests)")
      ->check(UnsignedAtLeast(0));
  cmd->add_option(
         "--max-failures", options.stream.max_failures,
         "with --fail-after-microbatches: at most N failures in all (0: no limit)")
      ->check(UnsignedAtLeast(0));
  cmd->add_option("--dataset", args->datasets,
                  "NAME=DIR: serve Amp Parquet files (DIR/<table>/<revision>/*.parquet)");
  cmd->add_flag("--no-synthetic", args->no_synthetic, "do not serve the synthetic chain");
  cmd->add_option("--require-token", args->token,
                  "reject calls without `authorization: Bearer TOKEN`");
  return [args] { return RunDevServer(*args); };
}

}  // namespace ampdelta::cli
