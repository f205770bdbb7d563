#include "load_job.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "ampdelta/amp/query_text.h"
#include "ampdelta/loader/backfill/block_replacement.h"
#include "ampdelta/loader/backfill/parallel_loader.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/stream/stream_loader.h"
#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/status.h"
#include "events.h"

namespace ampdelta::python {

struct LoadJob::Plan {
  loader::DeltaLakeConfig config;
  loader::LoadOptions options;
  std::optional<loader::ParallelOptions> parallel;
  bool stream = false;
  /// Report each batch of a batch load (an iterator, or a progress callback).
  bool batch_events = false;
  /// A load of Arrow data that replaces the table's rows of these blocks (first, last)
  /// that no stream recorded, in its commit: a partition of the SDK's parallel load,
  /// loaded again, replaces itself.
  std::optional<loader::BlockSpan> replace_blocks;
};

namespace {

using nlohmann::json;

arrow::Status Bad(const std::string& key, const std::string& what) {
  return InvalidInputError("load(): '", key, "' ", what);
}

// Readers of one optional keyword of the options object; absent and null leave `out`.
class Fields {
 public:
  explicit Fields(const json& object) : object_(object) {}

  const json* Find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  arrow::Status Bool(const std::string& key, bool* out) const {
    const json* value = Find(key);
    if (value == nullptr) return arrow::Status::OK();
    if (!value->is_boolean()) return Bad(key, "must be True or False");
    *out = value->get<bool>();
    return arrow::Status::OK();
  }
  arrow::Status String(const std::string& key, std::string* out) const {
    const json* value = Find(key);
    if (value == nullptr) return arrow::Status::OK();
    if (!value->is_string()) return Bad(key, "must be a string");
    *out = value->get<std::string>();
    return arrow::Status::OK();
  }
  template <typename Int>
  arrow::Status Integer(const std::string& key, int64_t min, Int* out) const {
    const json* value = Find(key);
    if (value == nullptr) return arrow::Status::OK();
    if (!value->is_number_integer()) return Bad(key, "must be an integer");
    const bool negative = !value->is_number_unsigned() && value->get<int64_t>() < 0;
    const auto max = static_cast<uint64_t>(std::numeric_limits<Int>::max());
    if (negative
            ? value->get<int64_t>() < min
            : value->get<uint64_t>() < static_cast<uint64_t>(std::max<int64_t>(min, 0))) {
      return Bad(key,
                 "must be at least " + std::to_string(min) + ", got " + value->dump());
    }
    if (!negative && value->get<uint64_t>() > max) {
      return Bad(key,
                 "must be at most " + std::to_string(max) + ", got " + value->dump());
    }
    *out = negative ? static_cast<Int>(value->get<int64_t>())
                    : static_cast<Int>(value->get<uint64_t>());
    return arrow::Status::OK();
  }
  template <typename Int>
  arrow::Status Optional(const std::string& key, int64_t min,
                         std::optional<Int>* out) const {
    if (Find(key) == nullptr) return arrow::Status::OK();
    Int value{};
    ARROW_RETURN_NOT_OK(Integer(key, min, &value));
    *out = value;
    return arrow::Status::OK();
  }
  arrow::Status Seconds(const std::string& key, std::chrono::milliseconds* out) const {
    const json* value = Find(key);
    if (value == nullptr) return arrow::Status::OK();
    if (!value->is_number() || value->get<double>() < 0 || value->get<double>() > 1e9) {
      return Bad(key, "must be a number of seconds, at least 0");
    }
    *out = std::chrono::milliseconds(static_cast<int64_t>(value->get<double>() * 1000));
    return arrow::Status::OK();
  }

 private:
  const json& object_;
};

arrow::Status ParseParallel(const json& object, loader::ParallelOptions* out) {
  if (!object.is_object()) return Bad("parallel", "must be an object");
  Fields fields(object);
  loader::ParallelOptions& parallel = *out;
  ARROW_RETURN_NOT_OK(fields.Integer("num_workers", 1, &parallel.num_workers));
  ARROW_RETURN_NOT_OK(fields.Optional("partition_size", 1, &parallel.partition_size));
  ARROW_RETURN_NOT_OK(fields.Optional("min_block", 0, &parallel.min_block));
  ARROW_RETURN_NOT_OK(fields.Optional("max_block", 0, &parallel.max_block));
  ARROW_RETURN_NOT_OK(fields.Bool("then_stream", &parallel.then_stream));
  ARROW_RETURN_NOT_OK(fields.Bool("stop_on_error", &parallel.stop_on_error));
  ARROW_RETURN_NOT_OK(fields.Optional("reorg_buffer", 0, &parallel.reorg_buffer));
  ARROW_RETURN_NOT_OK(
      fields.Integer("partition_attempts", 1, &parallel.partition_attempts));
  ARROW_RETURN_NOT_OK(fields.Integer("shard_count", 1, &parallel.shard_count));
  ARROW_RETURN_NOT_OK(fields.Integer("shard_index", 0, &parallel.shard_index));
  if (parallel.shard_index >= parallel.shard_count) {
    return Bad("shard", "index " + std::to_string(parallel.shard_index) +
                            " must be below the shard count " +
                            std::to_string(parallel.shard_count));
  }
  return arrow::Status::OK();
}

arrow::Status ParseTakeover(const json& value, loader::LoadOptions* options) {
  if (value.is_string() && value.get<std::string>() == "after-table-max") {
    options->takeover = loader::TakeoverMode::kAfterTableMax;
    return arrow::Status::OK();
  }
  if (value.is_object() && value.contains("from_block") &&
      value["from_block"].is_number_unsigned()) {
    options->takeover = loader::TakeoverMode::kFromBlock;
    options->takeover_block = value["from_block"].get<uint64_t>();
    return arrow::Status::OK();
  }
  return Bad("takeover", "must be 'after-table-max' or ('from-block', N)");
}

// {"from": first, "to": last}: the blocks a partition of the SDK's parallel load holds.
arrow::Status ParseReplaceBlocks(const json& value, LoadJob::Plan* plan) {
  if (!value.is_object() || !value.contains("from") || !value.contains("to") ||
      !value["from"].is_number_unsigned() || !value["to"].is_number_unsigned() ||
      value["from"].get<uint64_t>() > value["to"].get<uint64_t>() ||
      value["to"].get<uint64_t>() > uint64_t{INT64_MAX}) {
    return Bad("replace_blocks", "must be {'from': first block, 'to': last block}");
  }
  plan->replace_blocks =
      loader::BlockSpan{value["from"].get<uint64_t>(), value["to"].get<uint64_t>()};
  return arrow::Status::OK();
}

// A replacement of blocks is a load of Arrow data (a partition the SDK's parallel load
// fetched): a query or a stream records its own blocks.
arrow::Status OnlyForData(const LoadJob::Plan& plan) {
  if (plan.replace_blocks) {
    return Bad("replace_blocks", "replaces blocks with Arrow data only (load_stream)");
  }
  return arrow::Status::OK();
}

arrow::Status ParsePlan(const std::string& config_json, const std::string& options_json,
                        LoadJob::Plan* plan) {
  ARROW_ASSIGN_OR_RAISE(plan->config, loader::ParseDeltaLakeConfig(config_json));
  const json doc = json_util::ParseJson(options_json);
  if (!doc.is_object()) return Bad("options", "must be an object");
  static const char* const kKnown[] = {
      "destination", "mode", "merge_keys", "batch_size", "commit_every_rows",
      "compression", "compression_level", "read_all", "stream", "with_reorg_detection",
      "takeover",
      // set by load_stream_continuous from its first item
      "takeover_network", "until_block", "block_column", "idle_timeout",
      "stream_commit_rows", "stream_commit_interval", "reorg_window", "stall_warning",
      "parallel", "batch_events",
      // set by the SDK loader's load_stream for a partition of its parallel load
      "replace_blocks"};
  for (const auto& [key, value] : doc.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      return Bad(key, "is not a load option");
    }
  }
  Fields fields(doc);
  loader::LoadOptions& options = plan->options;
  ARROW_RETURN_NOT_OK(fields.String("destination", &options.destination));
  if (options.destination.empty()) options.destination = plan->config.table_path;
  std::string mode = loader::LoadModeName(options.mode);
  ARROW_RETURN_NOT_OK(fields.String("mode", &mode));
  ARROW_ASSIGN_OR_RAISE(options.mode, loader::ParseLoadMode(mode));
  if (const json* keys = fields.Find("merge_keys")) {
    if (!keys->is_array()) return Bad("merge_keys", "must be a list of column names");
    for (const auto& key : *keys) {
      if (!key.is_string()) return Bad("merge_keys", "must be a list of column names");
      options.merge_keys.push_back(key.get<std::string>());
    }
  }
  ARROW_RETURN_NOT_OK(fields.Optional("batch_size", 1, &options.batch_size));
  ARROW_RETURN_NOT_OK(
      fields.Optional("commit_every_rows", 1, &options.commit_every_rows));
  ARROW_RETURN_NOT_OK(fields.String("compression", &options.compression));
  ARROW_RETURN_NOT_OK(
      fields.Optional("compression_level", -1000000, &options.compression_level));
  ARROW_RETURN_NOT_OK(fields.Bool("read_all", &options.read_all));
  // Messages that name an option name it as Python's keyword.
  options.option_spelling = loader::OptionSpelling::kPython;
  ARROW_RETURN_NOT_OK(fields.Bool("stream", &plan->stream));
  ARROW_RETURN_NOT_OK(fields.Bool("with_reorg_detection", &options.with_reorg_detection));
  if (const json* takeover = fields.Find("takeover")) {
    ARROW_RETURN_NOT_OK(ParseTakeover(*takeover, &options));
  }
  ARROW_RETURN_NOT_OK(fields.String("takeover_network", &options.takeover_network));
  ARROW_RETURN_NOT_OK(fields.Optional("until_block", 0, &options.until_block));
  ARROW_RETURN_NOT_OK(fields.String("block_column", &options.block_column));
  ARROW_RETURN_NOT_OK(fields.Seconds("idle_timeout", &options.idle_timeout));
  ARROW_RETURN_NOT_OK(
      fields.Integer("stream_commit_rows", 1, &options.stream_commit_rows));
  ARROW_RETURN_NOT_OK(
      fields.Seconds("stream_commit_interval", &options.stream_commit_interval));
  ARROW_RETURN_NOT_OK(
      fields.Integer("reorg_window", 0, &options.stream_reorg_window_blocks));
  ARROW_RETURN_NOT_OK(fields.Seconds("stall_warning", &options.stream_stall_warning));
  ARROW_RETURN_NOT_OK(fields.Bool("batch_events", &plan->batch_events));
  if (const json* blocks = fields.Find("replace_blocks")) {
    ARROW_RETURN_NOT_OK(ParseReplaceBlocks(*blocks, plan));
  }
  if (const json* parallel = fields.Find("parallel")) {
    plan->parallel.emplace();
    ARROW_RETURN_NOT_OK(ParseParallel(*parallel, &*plan->parallel));
    if (plan->stream) {
      return Bad("stream", "with a parallel backfill is spelled then_stream=True");
    }
  }
  return arrow::Status::OK();
}

}  // namespace

LoadJob::LoadJob(std::string url, amp::ClientOptions client_options, std::string sql)
    : url_(std::move(url)),
      client_options_(std::move(client_options)),
      sql_(std::move(sql)),
      plan_(std::make_unique<Plan>()) {}

arrow::Result<std::unique_ptr<LoadJob>> LoadJob::Make(std::string url,
                                                      amp::ClientOptions client_options,
                                                      std::string sql,
                                                      const std::string& config_json,
                                                      const std::string& options_json) {
  std::unique_ptr<LoadJob> job(
      new LoadJob(std::move(url), std::move(client_options), std::move(sql)));
  ARROW_RETURN_NOT_OK(ParsePlan(config_json, options_json, job->plan_.get()));
  ARROW_RETURN_NOT_OK(OnlyForData(*job->plan_));
  return job;
}

arrow::Result<std::unique_ptr<LoadJob>> LoadJob::MakeForData(
    std::shared_ptr<arrow::RecordBatchReader> data, const std::string& config_json,
    const std::string& options_json) {
  std::unique_ptr<LoadJob> job(new LoadJob("", {}, ""));
  ARROW_RETURN_NOT_OK(ParsePlan(config_json, options_json, job->plan_.get()));
  if (job->plan_->stream || job->plan_->parallel) {
    return InvalidInputError(
        "load_table(): Arrow data is loaded as one batch; streaming and parallel loads "
        "run a query (Client.sql(...).load)");
  }
  job->data_ = std::move(data);
  return job;
}

arrow::Result<std::unique_ptr<LoadJob>> LoadJob::MakeForChannel(
    std::shared_ptr<amp::FedChannel> channel, std::string label,
    const std::string& config_json, const std::string& options_json) {
  // The label is the stream's query (its progress is the query's in the table), without
  // the SDK's `SETTINGS stream = true`: the same query streamed by ampdelta.Client is the
  // same stream.
  std::unique_ptr<LoadJob> job(new LoadJob("", {}, amp::WithoutStreamSetting(label)));
  ARROW_RETURN_NOT_OK(ParsePlan(config_json, options_json, job->plan_.get()));
  if (job->plan_->parallel) {
    return InvalidInputError("load_stream_continuous(): a parallel load runs a query");
  }
  ARROW_RETURN_NOT_OK(OnlyForData(*job->plan_));
  job->plan_->stream = true;
  // The SDK starts every stream from the dataset's first block: what it sends again of
  // the table's blocks is a replay, checked against their hashes.
  job->plan_->options.stream_replays_from_start = true;
  job->channel_ = std::move(channel);
  return job;
}

LoadJob::~LoadJob() {
  Stop();
  Join();
}

namespace {
std::mutex g_start_mutex;
bool g_refuse_new_loads = false;  // guarded by g_start_mutex
}  // namespace

void LoadJob::RefuseNewLoads() {
  std::lock_guard<std::mutex> start(g_start_mutex);
  g_refuse_new_loads = true;
}

void LoadJob::Start() {
  std::lock_guard<std::mutex> start(g_start_mutex);
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable() || finished_) return;
  if (g_refuse_new_loads) {
    loader::LoadResult refused;
    refused.table_name = plan_->options.destination;
    refused.status =
        arrow::Status::Cancelled("the interpreter is exiting: no load starts");
    refused.error = refused.status.message();
    events_.push_back(EventJson("final", refused));
    ++emitted_;
    finished_ = true;
    changed_.notify_all();
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

void LoadJob::Emit(std::string event, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
  const int64_t number = ++emitted_;
  changed_.notify_all();
  if (wait) changed_.wait(lock, [&] { return acked_ >= number || stop_.load(); });
}

void LoadJob::Run() {
  Plan& plan = *plan_;
  loader::LoadOptions& options = plan.options;
  options.stop = &stop_;
  options.cancellation = &cancellation_;
  auto report = [this](const char* kind) {
    return [this, kind](const loader::LoadResult& result) {
      Emit(EventJson(kind, result), /*wait=*/true);
    };
  };
  if (plan.batch_events) {
    options.on_batch = report("batch");
    options.read_all = false;  // read_all only silences per-batch reports
  }
  options.on_result = [this](const loader::LoadResult& result) {
    Emit(EventJson(result.is_reorg ? "reorg" : "commit", result), /*wait=*/true);
  };
  loader::LoadResult result;
  if (data_ != nullptr) {
    result = plan.replace_blocks ? loader::LoadReplacingBlocks(
                                       data_, plan.config, options, *plan.replace_blocks)
                                 : loader::LoadRecordBatches(data_, plan.config, options);
    // The producer's resources (a pyarrow reader's Python objects) are let go here, on
    // the loader thread, before Python sees the final result.
    data_.reset();
    Finish(result);
    return;
  }
  if (channel_ != nullptr) {
    amp::FedClient fed(channel_, "sdk-stream");
    result = loader::LoadStream(fed, sql_, plan.config, options);
    // The producer (Python) sees the end at its next push.
    channel_->Cancel();
    Finish(result);
    return;
  }
  auto client = amp::Client::Connect(url_, client_options_);
  if (!client.ok()) {
    result.table_name = options.destination;
    result.status = client.status();
    result.error = client.status().message();
  } else if (plan.parallel) {
    plan.parallel->on_partition = report("partition");
    result = loader::LoadParallel(**client, sql_, plan.config, options, *plan.parallel);
  } else if (plan.stream) {
    result = loader::LoadStream(**client, sql_, plan.config, options);
  } else {
    result = loader::LoadBatch(**client, sql_, plan.config, options);
  }
  Finish(result);
}

void LoadJob::Finish(const loader::LoadResult& result) {
  Emit(EventJson("final", result), /*wait=*/false);
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  changed_.notify_all();
}

std::optional<std::string> LoadJob::Next(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return !events_.empty() || finished_; });
  if (!events_.empty()) {
    std::string event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  if (finished_) return std::string();
  return std::nullopt;
}

void LoadJob::Ack() {
  std::lock_guard<std::mutex> lock(mutex_);
  acked_ = emitted_ - static_cast<int64_t>(events_.size());
  changed_.notify_all();
}

void LoadJob::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    changed_.notify_all();
  }
  cancellation_.CancelAll();
}

bool LoadJob::JoinFor(int64_t timeout_ms) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool started = thread_.joinable();
    if (started && !changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                      [&] { return finished_; })) {
      return false;
    }
  }
  Join();
  return true;
}

void LoadJob::Join() {
  std::lock_guard<std::mutex> lock(join_mutex_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
    thread_.join();
  }
}

}  // namespace ampdelta::python
