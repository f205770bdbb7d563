#pragma once

/// \file dev_server.h
/// \brief An Amp-compatible Flight server for demos, tests and benchmarks.
///
/// It speaks Amp's wire protocol (amp-protocol.md §1): GetFlightInfo with an Any-packed
/// `CommandStatementQuery`, DoGet with per-batch `app_metadata`, 0-row `ranges_complete`
/// markers, streaming microbatches as the head advances, `amp-resume` and `amp-stream`
/// headers, and Amp's gRPC error codes. It is a development tool, not Amp.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/devserver/synthetic_chain.h"

namespace ampdelta::devserver {

/// \brief How streaming queries are served.
struct StreamOptions {
  /// Largest microbatch, in blocks (Amp's `server_microbatch_max_interval`).
  uint64_t max_microbatch_blocks = 1000;
  /// Send nothing, not even the schema, until the first microbatch starts (ampd does: a
  /// client must not wait for the schema to be able to stop); false sends it at once.
  bool schema_with_first_microbatch = true;
  /// Send a 0-row keep-alive batch at the start of every microbatch, as Amp's keep-alive
  /// timer does when it first fires…
  bool keepalive_at_microbatch_start = true;
  /// …and again whenever a microbatch has been running this long without a message (ampd:
  /// max(keep_alive_interval, 30 s)).
  std::chrono::milliseconds keepalive_interval{std::chrono::seconds(30)};
  /// Fail every stream with INTERNAL after it served this many microbatches (0: never),
  /// as ampd reports any failure of a running query; at most `max_failures` times in all
  /// (0: no limit). For tests of reconnection.
  uint64_t fail_after_microbatches = 0;
  uint64_t max_failures = 0;
  /// How often a waiting stream checks for cancellation and shutdown.
  std::chrono::milliseconds poll_interval{50};
  /// Rows per record batch, batch queries and microbatches alike: DataFusion's default
  /// batch size, which ampd keeps (the last batch of a result or microbatch holds the
  /// rest); each is then split near 2 MiB per message.
  int64_t batch_rows = 8192;
  /// Threads that make a query's rows ahead of the client (read_ahead.h), in pieces of
  /// `scan_piece_blocks` blocks; 0: one per core, at most 8.
  int scan_threads = 0;
  uint64_t scan_piece_blocks = 256;
  /// Keep up to this many bytes of made rows in memory and serve repeated queries from
  /// them (PieceCache; benchmarks); 0 keeps none.
  int64_t cache_bytes = 0;
};

/// \brief How the synthetic chain moves on its own.
struct LiveOptions {
  /// Time between new blocks; zero keeps the chain still (tests advance it by hand).
  std::chrono::milliseconds block_interval{0};
  /// Stop advancing at this head (0: never stop).
  uint64_t max_head = 0;
  /// Reorg every N new blocks (0: never), replacing `reorg_depth` blocks.
  uint64_t reorg_every = 0;
  uint64_t reorg_depth = 1;
  /// Scripted reorgs: when the head reaches the key, replace `value` blocks.
  std::map<uint64_t, uint64_t> reorg_at;
  /// Add a block only when a stream is open and every open stream has been sent the whole
  /// chain, so that a reader however slow meets every reorg (tests; a real chain waits
  /// for nobody).
  bool await_streams = false;
};

/// \brief Everything the dev server can be told.
struct DevServerOptions {
  std::string host = "127.0.0.1";
  /// 0 picks a free port.
  int port = 0;
  /// Serve the synthetic chain.
  bool serve_synthetic = true;
  SyntheticChainOptions chain;
  /// Parquet folders served as datasets: (name, directory).
  std::vector<std::pair<std::string, std::string>> parquet_datasets;
  StreamOptions stream;
  LiveOptions live;
  /// When set, every call must carry `authorization: Bearer <token>`.
  std::optional<std::string> required_token;
};

/// \brief A running dev server. Thread-safe.
class DevServer {
 public:
  /// \brief Load the datasets, bind the port and start serving.
  static arrow::Result<std::unique_ptr<DevServer>> Start(DevServerOptions options);

  ~DevServer();
  DevServer(const DevServer&) = delete;
  DevServer& operator=(const DevServer&) = delete;

  /// \brief Return the bound port.
  int port() const;
  /// \brief Return `grpc://host:port`.
  std::string url() const;
  /// \brief Return the synthetic chain, or nullptr when it is not served.
  SyntheticChain* chain() const;

  /// \brief Append `blocks` blocks to the synthetic chain, applying the reorg rules.
  arrow::Status AdvanceHead(uint64_t blocks = 1);

  /// \brief End open streams and stop serving; idempotent.
  arrow::Status Shutdown();

  /// \brief Block until Shutdown() is called from another thread.
  void Wait();

 private:
  class Impl;
  explicit DevServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ampdelta::devserver
