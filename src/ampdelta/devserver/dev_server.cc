#include "ampdelta/devserver/dev_server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <arrow/flight/api.h>
#include <arrow/ipc/api.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/util/byte_size.h>
#include <nlohmann/json.hpp>

#include "ampdelta/devserver/parquet_dataset.h"
#include "ampdelta/devserver/query.h"
#include "ampdelta/devserver/read_ahead.h"
#include "ampdelta/devserver/sql.h"
#include "ampdelta/devserver/statement_command.h"
#include "ampdelta/devserver/stream_pacer.h"
#include "ampdelta/devserver/ticket.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"

namespace ampdelta::devserver {
namespace {

namespace flight = arrow::flight;
using nlohmann::json;

// Amp slices batches larger than about 2 MiB into several FlightData messages.
constexpr int64_t kTargetMessageBytes = 2 * 1024 * 1024;

std::optional<std::string> Header(const flight::ServerCallContext& context,
                                  std::string_view name) {
  const auto& headers = context.incoming_headers();
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return std::string(it->second);
}

// app_metadata exactly as Amp writes it (serde_json without preserve_order: keys sorted).
std::string RangesMetadata(const std::string& network, const ServedRange* range,
                           bool complete) {
  json ranges = json::array();
  if (range) {
    json item = {{"network", network},
                 {"numbers", {{"start", range->start}, {"end", range->end}}},
                 {"hash", range->hash},
                 {"prev_hash", range->prev_hash}};
    if (range->timestamp) item["timestamp"] = *range->timestamp;
    ranges.push_back(std::move(item));
  }
  return json_util::DumpJsonLossy(
      json{{"ranges", std::move(ranges)}, {"ranges_complete", complete}});
}

arrow::Status NonIncremental(const std::string& operation) {
  return arrow::Status::Invalid(
      "invalid query: non-incremental queries are not supported for streaming, query "
      "contains non-incremental operation: ",
      operation);
}

// Streams a query's results as Flight payloads, generating them on demand so memory stays
// bounded however long the range is.
class QueryDataStream : public flight::FlightDataStream {
 public:
  QueryDataStream(std::shared_ptr<const BoundQuery> query, bool streaming,
                  std::optional<ChainPosition> resume, StreamOptions options,
                  const flight::ServerCallContext* context,
                  const std::atomic<bool>* stopping, std::atomic<uint64_t>* failures,
                  StreamPacer* pacer, PieceCache* cache)
      : query_(std::move(query)),
        streaming_(streaming),
        previous_(std::move(resume)),
        options_(options),
        context_(context),
        stopping_(stopping),
        failures_(failures),
        pace_(streaming ? pacer->Open() : nullptr),
        cache_(cache),
        aggregator_(query_.get()) {}

  std::shared_ptr<arrow::Schema> schema() override { return query_->output_schema(); }

  arrow::Result<flight::FlightPayload> GetSchemaPayload() override {
    // ampd sends nothing before the first microbatch starts, not even the schema.
    if (streaming_ && options_.schema_with_first_microbatch) {
      ARROW_RETURN_NOT_OK(AsStreamingError(StartMicrobatch()));
    }
    flight::FlightPayload payload;
    arrow::ipc::DictionaryFieldMapper mapper(*query_->output_schema());
    ARROW_RETURN_NOT_OK(arrow::ipc::GetSchemaPayload(
        *query_->output_schema(), ipc_options_, mapper, &payload.ipc_message));
    return payload;
  }

  arrow::Result<flight::FlightPayload> Next() override {
    while (pending_.empty()) {
      if (done_) return flight::FlightPayload{};
      ARROW_RETURN_NOT_OK(streaming_ ? AsStreamingError(ProduceStreaming())
                                     : ProduceBatch());
    }
    flight::FlightPayload payload = std::move(pending_.front());
    pending_.pop_front();
    return payload;
  }

 private:
  arrow::Status Push(const std::shared_ptr<arrow::RecordBatch>& batch,
                     const std::string& metadata) {
    flight::FlightPayload payload;
    ARROW_RETURN_NOT_OK(
        arrow::ipc::GetRecordBatchPayload(*batch, ipc_options_, &payload.ipc_message));
    payload.app_metadata = arrow::Buffer::FromString(metadata);
    pending_.push_back(std::move(payload));
    return arrow::Status::OK();
  }

  arrow::Status PushEmpty(const std::string& metadata) {
    ARROW_ASSIGN_OR_RAISE(auto empty,
                          arrow::RecordBatch::MakeEmpty(query_->output_schema()));
    return Push(empty, metadata);
  }

  // Push a data batch, sliced like Amp's so no message is much larger than 2 MiB.
  arrow::Status PushSliced(const std::shared_ptr<arrow::RecordBatch>& batch,
                           const std::string& metadata) {
    const int64_t rows = batch->num_rows();
    if (rows == 0) return arrow::Status::OK();
    // The bytes the slice references, not its parents' whole buffers.
    ARROW_ASSIGN_OR_RAISE(const int64_t referenced,
                          arrow::util::ReferencedBufferSize(*batch));
    const int64_t bytes = std::max<int64_t>(1, referenced);
    const int64_t per_slice = std::max<int64_t>(1, rows * kTargetMessageBytes / bytes);
    for (int64_t offset = 0; offset < rows; offset += per_slice) {
      ARROW_RETURN_NOT_OK(Push(batch->Slice(offset, per_slice), metadata));
    }
    return arrow::Status::OK();
  }

  // Queue rows as ampd's plan yields them: in batches of options_.batch_rows, the
  // remainder held until more rows come or Flush.
  arrow::Status Coalesce(std::shared_ptr<arrow::RecordBatch> batch) {
    if (batch->num_rows() == 0) return arrow::Status::OK();
    held_rows_ += batch->num_rows();
    held_.push_back(std::move(batch));
    const int64_t size = std::max<int64_t>(1, options_.batch_rows);
    while (held_rows_ >= size) {
      ARROW_ASSIGN_OR_RAISE(auto all, TakeHeld());
      ARROW_RETURN_NOT_OK(PushSliced(all->Slice(0, size), metadata_));
      if (all->num_rows() > size) {
        held_.push_back(all->Slice(size));
        held_rows_ = all->num_rows() - size;
      }
    }
    return arrow::Status::OK();
  }

  // Send the rows Coalesce holds.
  arrow::Status Flush() {
    if (held_rows_ == 0) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto all, TakeHeld());
    return PushSliced(all, metadata_);
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> TakeHeld() {
    std::vector<std::shared_ptr<arrow::RecordBatch>> held = std::move(held_);
    held_.clear();
    held_rows_ = 0;
    if (held.size() == 1) return held.front();
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(std::move(held)));
    return table->CombineChunksToBatch();
  }

  // The query's rows for `range`, made and transformed ahead on the scan threads.
  std::unique_ptr<BatchIterator> OpenScan(const ScanRange& range) const {
    ReadAheadOptions read_ahead;
    read_ahead.threads = options_.scan_threads > 0 ? options_.scan_threads
                                                   : std::clamp(UsableCores(), 1, 8);
    read_ahead.piece_blocks = options_.scan_piece_blocks;
    read_ahead.cache = cache_;
    return ReadAhead(
        *query_->dataset(), query_->table(), range,
        [query = query_](const std::shared_ptr<arrow::RecordBatch>& source) {
          return query->Transform(source);
        },
        read_ahead);
  }

  arrow::Status CheckStillWanted() const {
    if (stopping_->load()) {
      return flight::MakeFlightError(flight::FlightStatusCode::Unavailable,
                                     "dev server is shutting down");
    }
    if (context_->is_cancelled()) return arrow::Status::Cancelled("client cancelled");
    return arrow::Status::OK();
  }

  arrow::Status ProduceBatch() {
    const Dataset& dataset = *query_->dataset();
    if (iterator_ == nullptr) {
      synced_ = dataset.Synced();
      metadata_ = RangesMetadata(dataset.network(), synced_ ? &synced_->range : nullptr,
                                 /*complete=*/false);
      if (!synced_) return FinishBatch();
      // The ranges reported stay the synced ones (ampd's); only the scan is narrowed.
      ScanRange scan = *synced_;
      ARROW_ASSIGN_OR_RAISE(auto bounds, query_->BlockBounds());
      if (bounds) {
        scan.range.start = std::max(scan.range.start, bounds->first);
        scan.range.end = std::min(scan.range.end, bounds->second);
        if (scan.range.start > scan.range.end) return FinishBatch();
      }
      iterator_ = OpenScan(scan);
    }
    ARROW_RETURN_NOT_OK(CheckStillWanted());
    ARROW_ASSIGN_OR_RAISE(auto batch, iterator_->Next());
    if (batch == nullptr) return FinishBatch();
    if (query_->is_aggregate()) return aggregator_.Consume(batch);
    if (query_->is_grouped()) {
      grouped_rows_.push_back(std::move(batch));
      return arrow::Status::OK();
    }
    if (query_->limit()) {
      const int64_t left = static_cast<int64_t>(*query_->limit()) - rows_sent_;
      if (batch->num_rows() >= left) {
        ARROW_RETURN_NOT_OK(Coalesce(batch->Slice(0, left)));
        rows_sent_ += left;
        return FinishBatch();
      }
    }
    rows_sent_ += batch->num_rows();
    return Coalesce(std::move(batch));
  }

  arrow::Status FinishBatch() {
    ARROW_RETURN_NOT_OK(Flush());
    if (query_->is_aggregate()) {
      ARROW_ASSIGN_OR_RAISE(auto result, aggregator_.Finish());
      ARROW_RETURN_NOT_OK(Push(result, metadata_));
    } else if (query_->is_grouped()) {
      ARROW_ASSIGN_OR_RAISE(auto result, query_->Group(grouped_rows_));
      grouped_rows_.clear();
      if (query_->limit() &&
          result->num_rows() > static_cast<int64_t>(*query_->limit())) {
        result = result->Slice(0, static_cast<int64_t>(*query_->limit()));
      }
      ARROW_RETURN_NOT_OK(result->num_rows() == 0 ? PushEmpty(metadata_)
                                                  : PushSliced(result, metadata_));
    } else if (rows_sent_ == 0) {
      // Amp always sends at least one (possibly empty) data batch before the marker.
      ARROW_RETURN_NOT_OK(PushEmpty(metadata_));
    }
    ARROW_RETURN_NOT_OK(PushEmpty(RangesMetadata(query_->dataset()->network(),
                                                 synced_ ? &synced_->range : nullptr,
                                                 /*complete=*/true)));
    done_ = true;
    return arrow::Status::OK();
  }

  // Failures of a running stream reach the client as ampd sends them: INTERNAL, the cause
  // behind "streaming query execution error | Caused by:" (the client's cancellation and
  // the server's shutdown keep their own codes).
  static arrow::Status AsStreamingError(const arrow::Status& status) {
    if (status.ok() || status.IsCancelled() ||
        flight::FlightStatusDetail::UnwrapStatus(status)) {
      return status;
    }
    return flight::MakeFlightError(
        flight::FlightStatusCode::Internal,
        "streaming query execution error | Caused by: " + status.message());
  }

  // Wait for the next microbatch to exist, then queue its keep-alive and open its scan.
  // Returns with `done_` set when the dataset has nothing synced at all.
  arrow::Status StartMicrobatch() {
    const Dataset& dataset = *query_->dataset();
    bool told = false;
    while (true) {
      ARROW_RETURN_NOT_OK(CheckStillWanted());
      const uint64_t seen = dataset.change_counter();
      current_ = dataset.NextMicrobatch(previous_, options_.max_microbatch_blocks);
      if (current_) break;
      const auto synced = dataset.Synced();
      if (first_ && !synced) {
        // Nothing synced at all: ampd sends one 0-row
        // `{"ranges":[],"ranges_complete":true}` and ends the stream.
        ARROW_RETURN_NOT_OK(PushEmpty(RangesMetadata(dataset.network(), nullptr, true)));
        done_ = true;
        return arrow::Status::OK();
      }
      if (!told && previous_ && synced && previous_->number < synced->range.start) {
        told = true;
        AMPDELTA_LOG_WARN(
            "devserver stream cursor at block ", previous_->number,
            " is below the dataset's first block ", synced->range.start,
            ": nothing will be sent (as ampd, whose blocks table lacks it)");
      }
      pace_->WaitingAt(&dataset, seen);
      dataset.WaitForChange(seen, options_.poll_interval);
    }
    pace_->Sending();
    first_ = false;
    if (options_.fail_after_microbatches > 0 &&
        served_ >= options_.fail_after_microbatches &&
        (options_.max_failures == 0 || failures_->fetch_add(1) < options_.max_failures)) {
      return arrow::Status::IOError("injected failure after ", served_, " microbatches");
    }
    ++served_;
    metadata_ = RangesMetadata(dataset.network(), &current_->range, /*complete=*/false);
    if (options_.keepalive_at_microbatch_start) ARROW_RETURN_NOT_OK(PushEmpty(metadata_));
    last_sent_ = std::chrono::steady_clock::now();
    iterator_ = OpenScan(*current_);
    return arrow::Status::OK();
  }

  arrow::Status ProduceStreaming() {
    const Dataset& dataset = *query_->dataset();
    if (iterator_ == nullptr) return StartMicrobatch();
    ARROW_RETURN_NOT_OK(CheckStillWanted());
    ARROW_ASSIGN_OR_RAISE(auto batch, iterator_->Next());
    if (batch == nullptr) {
      if (query_->is_grouped()) {
        // Grouped by _block_num first: a microbatch's groups are complete at its end.
        ARROW_ASSIGN_OR_RAISE(auto result, query_->Group(grouped_rows_));
        grouped_rows_.clear();
        ARROW_RETURN_NOT_OK(PushSliced(result, metadata_));
      }
      ARROW_RETURN_NOT_OK(Flush());
      ARROW_RETURN_NOT_OK(PushEmpty(
          RangesMetadata(dataset.network(), &current_->range, /*complete=*/true)));
      previous_ = ChainPosition{current_->range.end, current_->range.hash};
      iterator_.reset();
      return arrow::Status::OK();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_sent_ >= options_.keepalive_interval) {
      ARROW_RETURN_NOT_OK(PushEmpty(metadata_));  // a long microbatch: ampd's timer fires
      last_sent_ = now;
    }
    if (query_->is_grouped()) {
      grouped_rows_.push_back(std::move(batch));
      return arrow::Status::OK();
    }
    last_sent_ = now;
    return Coalesce(std::move(batch));
  }

  std::shared_ptr<const BoundQuery> query_;
  bool streaming_;
  std::optional<ChainPosition> previous_;
  StreamOptions options_;
  const flight::ServerCallContext* context_;
  const std::atomic<bool>* stopping_;
  std::atomic<uint64_t>* failures_;
  std::unique_ptr<StreamPacer::Stream> pace_;
  PieceCache* cache_;
  uint64_t served_ = 0;
  std::chrono::steady_clock::time_point last_sent_;
  arrow::ipc::IpcWriteOptions ipc_options_ = arrow::ipc::IpcWriteOptions::Defaults();

  std::deque<flight::FlightPayload> pending_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> held_;
  int64_t held_rows_ = 0;
  bool done_ = false;
  bool first_ = true;
  std::unique_ptr<BatchIterator> iterator_;
  std::optional<ScanRange> synced_;
  std::optional<ScanRange> current_;
  std::string metadata_;
  int64_t rows_sent_ = 0;
  BoundQuery::Aggregator aggregator_;
  // The transformed rows of the scan (batch) or microbatch (stream) a grouped query
  // groups.
  std::vector<std::shared_ptr<arrow::RecordBatch>> grouped_rows_;
};

class AmpFlightService : public flight::FlightServerBase {
 public:
  AmpFlightService(Catalog catalog, StreamOptions stream,
                   std::optional<std::string> required_token)
      : catalog_(std::move(catalog)),
        stream_(stream),
        required_token_(std::move(required_token)),
        cache_(stream.cache_bytes > 0 ? std::make_unique<PieceCache>(stream.cache_bytes)
                                      : nullptr) {}

  const StreamPacer& pacer() const { return pacer_; }

  arrow::Status GetFlightInfo(const flight::ServerCallContext& context,
                              const flight::FlightDescriptor& request,
                              std::unique_ptr<flight::FlightInfo>* info) override {
    ARROW_RETURN_NOT_OK(CheckAuth(context));
    if (request.type != flight::FlightDescriptor::CMD) {
      return arrow::Status::Invalid(
          "unsupported flight descriptor type: ",
          request.type == flight::FlightDescriptor::PATH ? "PATH" : "UNKNOWN");
    }
    ARROW_ASSIGN_OR_RAISE(std::string sql, DecodeStatementQueryCommand(request.cmd));
    ARROW_ASSIGN_OR_RAISE(auto query, Plan(sql));

    Ticket ticket;
    ticket.query = sql;
    ticket.streaming = query->streaming_setting();
    if (auto header = Header(context, "amp-stream")) {
      const std::string value = AsciiLower(*header);
      if (value == "true" || value == "1") ticket.streaming = true;
      if (value == "false" || value == "0") ticket.streaming = false;
    }
    if (auto header = Header(context, "amp-resume")) {
      // ampd drops a cursor that does not deserialise (not JSON, wrong types, a hash that
      // is not 32 bytes) and streams from its earliest block.
      const json cursor = json_util::ParseJson(*header);
      if (IsWellFormedCursor(cursor)) {
        ticket.cursor = json_util::DumpJsonLossy(cursor);
      } else {
        AMPDELTA_LOG_INFO("devserver ignoring malformed amp-resume (as ampd does): ",
                          header->substr(0, 200));
      }
    }
    AMPDELTA_LOG_INFO("devserver plan stream=", ticket.streaming ? "true" : "false",
                      " sql=", sql);
    ARROW_ASSIGN_OR_RAISE(std::string ticket_bytes, EncodeTicket(ticket));
    ARROW_ASSIGN_OR_RAISE(
        flight::FlightInfo result,
        flight::FlightInfo::Make(
            *query->output_schema(), request,
            {flight::FlightEndpoint{{std::move(ticket_bytes)}, {}, std::nullopt, ""}},
            /*total_records=*/-1, /*total_bytes=*/-1, /*ordered=*/false));
    *info = std::make_unique<flight::FlightInfo>(std::move(result));
    return arrow::Status::OK();
  }

  arrow::Status DoGet(const flight::ServerCallContext& context,
                      const flight::Ticket& request,
                      std::unique_ptr<flight::FlightDataStream>* stream) override {
    ARROW_RETURN_NOT_OK(CheckAuth(context));
    ARROW_ASSIGN_OR_RAISE(Ticket ticket, DecodeTicket(request.ticket));
    ARROW_ASSIGN_OR_RAISE(auto query, Plan(ticket.query));
    std::optional<ChainPosition> resume;
    if (ticket.streaming) {
      if (auto operation = query->NonIncrementalOperation())
        return NonIncremental(*operation);
      if (!ticket.cursor.empty()) {
        ARROW_ASSIGN_OR_RAISE(resume, CursorFor(json_util::ParseJson(ticket.cursor),
                                                query->dataset()->network()));
      }
    }
    *stream = std::make_unique<QueryDataStream>(
        std::move(query), ticket.streaming, std::move(resume), stream_, &context,
        &stopping_, &failures_, &pacer_, cache_.get());
    return arrow::Status::OK();
  }

  void BeginShutdown() { stopping_.store(true); }

 private:
  arrow::Status CheckAuth(const flight::ServerCallContext& context) const {
    if (!required_token_) return arrow::Status::OK();
    auto header = Header(context, "authorization");
    if (!header || *header != "Bearer " + *required_token_) {
      return flight::MakeFlightError(flight::FlightStatusCode::Unauthenticated,
                                     "missing or invalid bearer token");
    }
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<const BoundQuery>> Plan(const std::string& sql) const {
    std::string trimmed = sql;
    trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
    if (trimmed.empty()) {
      // ampd's text (flight.rs: the query string fails to parse as non-blank).
      return arrow::Status::Invalid(
          "invalid query: string cannot be empty or contain only whitespace, got: ", sql);
    }
    ARROW_ASSIGN_OR_RAISE(sql::SelectStatement statement, sql::Parse(sql));
    return BoundQuery::Bind(statement, catalog_);
  }

  // ampd's Cursor: {network: {"number": u64, "hash": "0x" + 64 hex digits}}.
  static bool IsWellFormedCursor(const json& cursor) {
    if (!cursor.is_object()) return false;
    for (auto it = cursor.begin(); it != cursor.end(); ++it) {
      const json& entry = it.value();
      if (!entry.is_object()) return false;
      auto number = entry.find("number");
      auto hash = entry.find("hash");
      if (number == entry.end() || !number->is_number_unsigned() || hash == entry.end() ||
          !hash->is_string()) {
        return false;
      }
      const std::string& text = hash->get_ref<const std::string&>();
      if (text.size() != 66 || text.rfind("0x", 0) != 0 ||
          text.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) {
        return false;
      }
    }
    return true;
  }

  // Narrow a cursor to the query's network, as ampd's StreamingQuery::spawn does.
  static arrow::Result<ChainPosition> CursorFor(const json& cursor,
                                                const std::string& network) {
    if (!IsWellFormedCursor(cursor)) {
      return arrow::Status::Invalid(
          "ticket decoding error | Caused by: malformed cursor");
    }
    auto entry = cursor.find(network);
    if (entry == cursor.end()) {
      std::string networks;
      for (auto it = cursor.begin(); it != cursor.end(); ++it) {
        networks += (networks.empty() ? "" : ",") + it.key();
      }
      return flight::MakeFlightError(
          flight::FlightStatusCode::Internal,
          "streaming query execution error | Caused by: failed to convert cursor -> "
          "expected "
          "cursor for network '" +
              network + "', but cursor only contains networks: [" + networks + "]");
    }
    return ChainPosition{(*entry)["number"].get<uint64_t>(),
                         (*entry)["hash"].get<std::string>()};
  }

  Catalog catalog_;
  StreamOptions stream_;
  std::optional<std::string> required_token_;
  std::unique_ptr<PieceCache> cache_;  // shared by every stream
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> failures_{0};
  StreamPacer pacer_;
};

}  // namespace

class DevServer::Impl {
 public:
  DevServerOptions options;
  std::shared_ptr<SyntheticChain> chain;
  std::unique_ptr<AmpFlightService> service;
  std::thread ticker;
  std::mutex mutex;
  std::condition_variable stopped_cv;
  bool stopped = false;
  uint64_t initial_head = 0;

  arrow::Status Advance(uint64_t blocks) {
    if (chain == nullptr)
      return arrow::Status::Invalid("the synthetic chain is not served");
    const LiveOptions& live = options.live;
    for (uint64_t i = 0; i < blocks; ++i) {
      // The new block and the reorgs it brings land together, as on a node that switched
      // forks: nobody reads the new head on the fork it replaces.
      const uint64_t head = chain->head() + 1;
      std::vector<uint64_t> depths;
      auto scripted = live.reorg_at.find(head);
      if (scripted != live.reorg_at.end()) depths.push_back(scripted->second);
      if (live.reorg_every > 0 && (head - initial_head) % live.reorg_every == 0) {
        depths.push_back(live.reorg_depth);
        AMPDELTA_LOG_INFO("devserver reorg head=", head, " depth=", live.reorg_depth);
      }
      ARROW_RETURN_NOT_OK(chain->AdvanceHeadThenReorg(depths));
    }
    return arrow::Status::OK();
  }

  void Tick() {
    const auto interval = options.live.block_interval;
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopped) {
      if (stopped_cv.wait_for(lock, interval, [&] { return stopped; })) break;
      if (options.live.max_head != 0 && chain->head() >= options.live.max_head) continue;
      if (options.live.await_streams &&
          !service->pacer().AllWaitingAt(chain.get(), chain->change_counter()))
        continue;
      lock.unlock();
      arrow::Status status = Advance(1);
      if (!status.ok())
        AMPDELTA_LOG_WARN("devserver advance failed: ", status.ToString());
      lock.lock();
    }
  }
};

DevServer::DevServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DevServer::~DevServer() {
  arrow::Status status = Shutdown();
  if (!status.ok()) AMPDELTA_LOG_WARN("devserver shutdown failed: ", status.ToString());
}

arrow::Result<std::unique_ptr<DevServer>> DevServer::Start(DevServerOptions options) {
  auto impl = std::make_unique<Impl>();
  Catalog catalog;
  if (options.serve_synthetic) {
    impl->chain = std::make_shared<SyntheticChain>(options.chain);
    impl->initial_head = impl->chain->head();
    catalog.Add(impl->chain);
  }
  for (const auto& [name, dir] : options.parquet_datasets) {
    ARROW_ASSIGN_OR_RAISE(auto dataset, ParquetDataset::Open(name, dir));
    catalog.Add(std::move(dataset));
  }
  if (catalog.datasets().empty()) return arrow::Status::Invalid("no dataset to serve");
  impl->service = std::make_unique<AmpFlightService>(std::move(catalog), options.stream,
                                                     options.required_token);
  ARROW_ASSIGN_OR_RAISE(auto location,
                        flight::Location::ForGrpcTcp(options.host, options.port));
  flight::FlightServerOptions server_options(location);
  ARROW_RETURN_NOT_OK(impl->service->Init(server_options));
  impl->options = std::move(options);
  if (impl->chain != nullptr && impl->options.live.block_interval.count() > 0) {
    Impl* raw = impl.get();
    impl->ticker = std::thread([raw] { raw->Tick(); });
  }
  AMPDELTA_LOG_INFO("devserver listening port=", impl->service->port());
  return std::unique_ptr<DevServer>(new DevServer(std::move(impl)));
}

int DevServer::port() const { return impl_->service->port(); }

std::string DevServer::url() const {
  return "grpc://" + impl_->options.host + ":" + std::to_string(port());
}

SyntheticChain* DevServer::chain() const { return impl_->chain.get(); }

arrow::Status DevServer::AdvanceHead(uint64_t blocks) { return impl_->Advance(blocks); }

arrow::Status DevServer::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopped) return arrow::Status::OK();
    impl_->stopped = true;
  }
  impl_->stopped_cv.notify_all();
  if (impl_->ticker.joinable()) impl_->ticker.join();
  impl_->service->BeginShutdown();
  // Open streams notice `stopping` within one poll interval; give them a moment to end.
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(2);
  ARROW_RETURN_NOT_OK(impl_->service->Shutdown(&deadline));
  return impl_->service->Wait();
}

void DevServer::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->stopped_cv.wait(lock, [&] { return impl_->stopped; });
}

}  // namespace ampdelta::devserver
