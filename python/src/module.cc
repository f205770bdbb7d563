// `ampdelta._native`: the extension behind the Python package (docs/python.md). It speaks
// JSON text with python/ampdelta/, which builds the SDK's objects and exceptions from it;
// no C++ exception crosses into Python, errors come back as an error JSON.

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <arrow/memory_pool.h>
#include <arrow/util/config.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/amp/fed_stream.h"
#include "ampdelta/amp/query_text.h"
#include "ampdelta/loader/backfill/coverage.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/status.h"
#include "ampdelta/version.h"
#include "arrow_data.h"
#include "events.h"
#include "gil.h"
#include "load_job.h"
#include "query_reader.h"
#include "table_ops.h"

namespace nb = nanobind;

namespace ampdelta::python {
namespace {

using Outcome = std::pair<std::optional<std::string>, std::optional<std::string>>;

amp::ClientOptions ClientOptionsFor(const std::optional<std::string>& auth_token) {
  amp::ClientOptions options;
  // Unset: the engine reads $AMP_AUTH_TOKEN, as the SDK does.
  options.auth_token = auth_token;
  return options;
}

// A load job, or why it could not be made (bad options or configuration).
class PyLoadJob {
 public:
  PyLoadJob(std::string url, std::optional<std::string> auth_token, std::string sql,
            const std::string& config_json, const std::string& options_json) {
    Take(LoadJob::Make(std::move(url), ClientOptionsFor(auth_token), std::move(sql),
                       config_json, options_json));
  }
  // A stream load of the messages handed over through `channel`.
  PyLoadJob(std::shared_ptr<amp::FedChannel> channel, std::string label,
            const std::string& config_json, const std::string& options_json) {
    Take(LoadJob::MakeForChannel(std::move(channel), std::move(label), config_json,
                                 options_json));
  }
  // A load of the Arrow data of `data` (a reader imported from a capsule, or why not).
  PyLoadJob(arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> data,
            const std::string& config_json, const std::string& options_json) {
    if (!data.ok()) {
      error_ = ErrorJson(data.status());
      return;
    }
    Take(LoadJob::MakeForData(std::move(*data), config_json, options_json));
  }

  // The job stops and joins its loader thread: without the GIL, which the thread may
  // need to free a producer's buffers (numpy-backed pyarrow data).
  ~PyLoadJob() {
    if (job_ == nullptr) return;
    ReleasedGil released;
    job_.reset();
  }
  PyLoadJob(const PyLoadJob&) = delete;
  PyLoadJob& operator=(const PyLoadJob&) = delete;

  const std::optional<std::string>& error() const { return error_; }
  void Start() {
    if (job_) job_->Start();
  }
  std::optional<std::string> Next(double timeout_s) {
    if (!job_) return std::string();
    return job_->Next(static_cast<int64_t>(timeout_s * 1000));
  }
  void Ack() {
    if (job_) job_->Ack();
  }
  void Stop() {
    if (job_) job_->Stop();
  }
  void Join() {
    if (job_) job_->Join();
  }
  bool JoinFor(double timeout_s) {
    return job_ == nullptr || job_->JoinFor(static_cast<int64_t>(timeout_s * 1000));
  }

 private:
  void Take(arrow::Result<std::unique_ptr<LoadJob>> job) {
    if (job.ok()) {
      job_ = std::move(*job);
    } else {
      error_ = ErrorJson(job.status());
    }
  }

  std::unique_ptr<LoadJob> job_;
  std::optional<std::string> error_;
};

// The engine runs markedly faster on jemalloc than on the wheel's default mimalloc
// (docs/benchmarks.md). The extension's own Arrow picks its allocator at its first
// allocation, from $ARROW_DEFAULT_MEMORY_POOL: set it for that moment only, so a pyarrow
// in the same process keeps its own default. A pool the user chose is kept.
void SelectOwnMemoryPool() {
  const char* chosen = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
  if (chosen != nullptr && *chosen != '\0') {
    arrow::default_memory_pool();
    return;
  }
  const std::optional<std::string> before =
      chosen == nullptr ? std::nullopt : std::optional<std::string>(chosen);
  ::setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/1);
  arrow::default_memory_pool();
  if (before) {
    ::setenv("ARROW_DEFAULT_MEMORY_POOL", before->c_str(), /*overwrite=*/1);
  } else {
    ::unsetenv("ARROW_DEFAULT_MEMORY_POOL");
  }
}

// (value, None) or (None, error JSON): how the extension answers Python.
using Answer = std::pair<nb::object, std::optional<std::string>>;

template <typename T>
Answer AnswerOf(arrow::Result<T> result) {
  if (!result.ok()) return {nb::none(), ErrorJson(result.status())};
  return {nb::cast(std::move(*result)), std::nullopt};
}

// A stream another client reads (the SDK's), handed to a load message by message.
class PyFedChannel {
 public:
  explicit PyFedChannel(std::shared_ptr<amp::FedChannel> channel)
      : channel_(std::move(channel)) {}

  // A channel for the stream whose first message is `capsule` + `metadata_json`.
  static Answer Open(nb::handle capsule, const std::string& metadata_json) {
    auto message = Message(capsule, metadata_json);
    if (!message.ok()) return {nb::none(), ErrorJson(message.status())};
    PyFedChannel opened(std::make_shared<amp::FedChannel>(message->data->schema()));
    // Room for the first message: the channel is new.
    auto pushed =
        opened.channel_->Push(std::move(*message), std::chrono::milliseconds(0));
    if (!pushed.ok()) return {nb::none(), ErrorJson(pushed.status())};
    return {nb::cast(std::move(opened)), std::nullopt};
  }

  // (True, None) when queued, (False, None) when there was no room within `timeout_s`
  // (the message is kept: retry with PushPending, never by exporting the item again,
  // which a one-shot producer would give as an empty stream), (None, error JSON) when the
  // load ended or the message is bad.
  Answer Push(nb::handle capsule, const std::string& metadata_json, double timeout_s) {
    auto message = Message(capsule, metadata_json);
    if (!message.ok()) return {nb::none(), ErrorJson(message.status())};
    pending_ = std::move(*message);
    return PushPending(timeout_s);
  }

  // The message a Push could not queue yet, pushed again.
  Answer PushPending(double timeout_s) {
    if (!pending_) return {nb::bool_(true), std::nullopt};
    arrow::Result<bool> pushed = [&] {
      ReleasedGil release;
      return channel_->Push(
          *pending_, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    }();
    if (!pushed.ok()) {
      pending_.reset();
      return {nb::none(), ErrorJson(pushed.status())};
    }
    if (*pushed) pending_.reset();
    return {nb::bool_(*pushed), std::nullopt};
  }

  void Close() { channel_->Close(); }
  // The producer failed (`bad_item`: an item could not be loaded).
  void Fail(const std::string& message, bool bad_item) {
    channel_->Fail(
        bad_item ? InvalidInputError("a stream item cannot be loaded: ", message)
                 : ServerError("the stream handed to the loader failed: " + message));
  }
  const std::shared_ptr<amp::FedChannel>& channel() const { return channel_; }

 private:
  static arrow::Status ServerError(const std::string& message) {
    return MakeError(ErrorCode::kServerError, arrow::StatusCode::IOError, message);
  }

  // One message: the batch of a stream capsule (its batches combined) and the server's
  // app_metadata JSON ("" for none).
  static arrow::Result<amp::ResponseBatch> Message(nb::handle capsule,
                                                   const std::string& metadata_json) {
    ARROW_ASSIGN_OR_RAISE(auto reader, ImportStreamCapsule(capsule));
    amp::ResponseBatch message;
    {
      ReleasedGil release;
      ARROW_ASSIGN_OR_RAISE(auto table, reader->ToTable());
      ARROW_ASSIGN_OR_RAISE(message.data, table->CombineChunksToBatch());
      reader.reset();
    }
    if (!metadata_json.empty()) {
      ARROW_ASSIGN_OR_RAISE(message.metadata, amp::ParseBatchMetadata(metadata_json));
      message.has_metadata = true;
    }
    return message;
  }

  std::shared_ptr<amp::FedChannel> channel_;
  std::optional<amp::ResponseBatch> pending_;
};

// (capsule "arrow_array_stream", None) or (None, error JSON).
Answer OpenQueryStream(const std::string& url,
                       const std::optional<std::string>& auth_token,
                       const std::string& sql) {
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> reader;
  {
    ReleasedGil release;
    reader = OpenQueryReader(url, ClientOptionsFor(auth_token), sql);
  }
  if (!reader.ok()) return {nb::none(), ErrorJson(reader.status())};
  return AnswerOf(ExportStreamCapsule(*reader));
}

// A stream capsule read to its end into a table the extension holds: to_arrow() without
// pyarrow. The GIL is released while reading (the producer takes it if it needs it).
Answer CollectStream(nb::handle capsule) {
  auto reader = ImportStreamCapsule(capsule);
  if (!reader.ok()) return {nb::none(), ErrorJson(reader.status())};
  auto table = [&reader] {
    ReleasedGil release;
    auto collected = HeldTable::Collect(*reader);
    reader->reset();
    return collected;
  }();
  return AnswerOf(std::move(table));
}

// A stream capsule to read batch by batch (iterating a result without pyarrow).
Answer ReadStream(nb::handle capsule) {
  auto reader = ImportStreamCapsule(capsule);
  if (!reader.ok()) return {nb::none(), ErrorJson(reader.status())};
  return {nb::cast(HeldReader(std::move(*reader))), std::nullopt};
}

// (the next batch or None, None) or (None, error JSON).
Answer NextBatch(HeldReader& reader) {
  auto next = [&reader] {
    ReleasedGil release;
    return reader.Next();
  }();
  if (!next.ok()) return {nb::none(), ErrorJson(next.status())};
  if (!next->has_value()) return {nb::none(), std::nullopt};
  return {nb::cast(std::move(**next)), std::nullopt};
}

// A record batch given as `__arrow_c_array__` capsules, as a stream capsule.
Answer StreamFromArray(nb::handle schema_capsule, nb::handle array_capsule) {
  auto reader = ImportArrayCapsules(schema_capsule, array_capsule);
  if (!reader.ok()) return {nb::none(), ErrorJson(reader.status())};
  return AnswerOf(ExportStreamCapsule(*reader));
}

Outcome TableOperation(const std::string& path, const std::string& storage_options_json,
                       const std::string& operation, const std::string& args_json) {
  auto result = RunTableOperation(path, storage_options_json, operation, args_json);
  if (!result.ok()) return {std::nullopt, ErrorJson(result.status())};
  return {std::move(*result), std::nullopt};
}

// The blocks the server has synced for `sql` as a backfill plans on them
// (loader/backfill/coverage.h): ({"network", "first", "head"} JSON, None) or (None,
// error JSON). The Ray driver fixes its range with it.
Outcome ProbeCoverage(const std::string& url,
                      const std::optional<std::string>& auth_token,
                      const std::string& sql, const std::string& block_column) {
  // As the driver always has: two minutes to plan and to answer.
  constexpr std::chrono::seconds kTimeout{120};
  amp::ClientOptions client_options = ClientOptionsFor(auth_token);
  client_options.plan_timeout = kTimeout;
  auto client = amp::Client::Connect(url, client_options);
  if (!client.ok()) return {std::nullopt, ErrorJson(client.status())};
  loader::LoadOptions options;
  options.idle_timeout = kTimeout;
  // The batch query a backfill's shards run (ParallelLoad drops the stream setting too).
  auto coverage = loader::ProbeCoverage(**client, amp::WithoutStreamSetting(sql),
                                        block_column, loader::DeltaLakeConfig{}, options);
  if (!coverage.ok()) return {std::nullopt, ErrorJson(coverage.status())};
  const nlohmann::json doc = {{"network", coverage->network},
                              {"first", coverage->first},
                              {"head", coverage->head}};
  return {doc.dump(), std::nullopt};
}

std::optional<std::string> ValidateConfig(const std::string& config_json) {
  auto config = loader::ParseDeltaLakeConfig(config_json);
  if (config.ok()) return std::nullopt;
  return ErrorJson(config.status());
}

}  // namespace
}  // namespace ampdelta::python

NB_MODULE(_native, m) {
  using ampdelta::python::PyLoadJob;
  m.attr("__version__") = ampdelta::kVersion;
  ampdelta::python::SetMainThread(nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident")));
  // Daemon threads still iterating a load when the interpreter exits keep their jobs:
  // expected, not a leak worth a warning.
  nb::set_leak_warnings(false);
  ampdelta::python::SelectOwnMemoryPool();
  m.attr("MEMORY_POOL") = arrow::default_memory_pool()->backend_name();
  // Compute kernels and the TLS CA paths, as every ampdelta program sets them up.
  const arrow::Status runtime = ampdelta::InitializeRuntime();
  m.attr("runtime_error") =
      runtime.ok() ? nb::none() : nb::str(runtime.ToString().c_str());
  m.attr("ARROW_VERSION") = ARROW_VERSION_STRING;
  // Daemon threads park instead of taking the GIL back from here on (gil.h). Registered
  // before ampdelta's own hook that stops live loads, so it runs after it.
  nb::module_::import_("atexit").attr("register")(
      nb::cpp_function([] { ampdelta::python::MarkExiting(); }));
  nb::class_<PyLoadJob>(m, "LoadJob", nb::is_weak_referenceable())
      .def(nb::init<std::string, std::optional<std::string>, std::string,
                    const std::string&, const std::string&>(),
           nb::arg("url"), nb::arg("auth_token").none(), nb::arg("sql"),
           nb::arg("config_json"), nb::arg("options_json"))
      .def_static(
          "for_stream",
          [](nb::handle capsule, const std::string& config_json,
             const std::string& options_json) {
            return new PyLoadJob(ampdelta::python::ImportStreamCapsule(capsule),
                                 config_json, options_json);
          },
          nb::arg("capsule"), nb::arg("config_json"), nb::arg("options_json"),
          nb::rv_policy::take_ownership)
      .def_static(
          "for_channel",
          [](const ampdelta::python::PyFedChannel& channel, std::string label,
             const std::string& config_json, const std::string& options_json) {
            return new PyLoadJob(channel.channel(), std::move(label), config_json,
                                 options_json);
          },
          nb::arg("channel"), nb::arg("label"), nb::arg("config_json"),
          nb::arg("options_json"), nb::rv_policy::take_ownership)
      .def_prop_ro("error", &PyLoadJob::error)
      .def("start", &PyLoadJob::Start)
      .def(
          "next",
          [](PyLoadJob& job, double timeout_s) {
            return ampdelta::python::WithoutGil([&] { return job.Next(timeout_s); });
          },
          nb::arg("timeout_s"))
      .def("ack", &PyLoadJob::Ack)
      .def("stop", &PyLoadJob::Stop)
      .def(
          "join_for",
          [](PyLoadJob& job, double timeout_s) {
            return ampdelta::python::WithoutGil([&] { return job.JoinFor(timeout_s); });
          },
          nb::arg("timeout_s"))
      .def("join", [](PyLoadJob& job) {
        ampdelta::python::WithoutGil([&] {
          job.Join();
          return true;
        });
      });
  m.def("open_query_stream", &ampdelta::python::OpenQueryStream, nb::arg("url"),
        nb::arg("auth_token").none(), nb::arg("sql"));
  using ampdelta::python::HeldTable;
  nb::class_<HeldTable>(m, "HeldTable")
      .def_prop_ro("num_rows",
                   [](const HeldTable& held) { return held.table()->num_rows(); })
      .def_prop_ro("column_names",
                   [](const HeldTable& held) { return held.table()->ColumnNames(); })
      .def_prop_ro(
          "schema_text",
          [](const HeldTable& held) { return held.table()->schema()->ToString(); })
      .def("export_stream",
           [](const HeldTable& held) {
             return ampdelta::python::AnswerOf(held.ExportStream());
           })
      .def("export_schema", [](const HeldTable& held) {
        return ampdelta::python::AnswerOf(
            ampdelta::python::ExportSchemaCapsule(*held.table()->schema()));
      });
  using ampdelta::python::PyFedChannel;
  nb::class_<PyFedChannel>(m, "FedChannel")
      .def_static("open", &PyFedChannel::Open, nb::arg("capsule"),
                  nb::arg("metadata_json"))
      .def("push", &PyFedChannel::Push, nb::arg("capsule"), nb::arg("metadata_json"),
           nb::arg("timeout_s"))
      .def("push_pending", &PyFedChannel::PushPending, nb::arg("timeout_s"))
      .def("close", &PyFedChannel::Close, nb::call_guard<ampdelta::python::ReleasedGil>())
      .def("fail", &PyFedChannel::Fail, nb::arg("message"), nb::arg("bad_item"),
           nb::call_guard<ampdelta::python::ReleasedGil>());
  using ampdelta::python::HeldReader;
  nb::class_<HeldReader>(m, "HeldReader").def("next", &ampdelta::python::NextBatch);
  m.def("read_stream", &ampdelta::python::ReadStream, nb::arg("capsule"));
  m.def("collect_stream", &ampdelta::python::CollectStream, nb::arg("capsule"));
  m.def("stream_from_array", &ampdelta::python::StreamFromArray,
        nb::arg("schema_capsule"), nb::arg("array_capsule"));
  m.def("table_operation", &ampdelta::python::TableOperation, nb::arg("path"),
        nb::arg("storage_options_json"), nb::arg("operation"), nb::arg("args_json"),
        nb::call_guard<ampdelta::python::ReleasedGil>());
  m.def("refuse_new_loads", &ampdelta::python::LoadJob::RefuseNewLoads);
  m.def("validate_config", &ampdelta::python::ValidateConfig, nb::arg("config_json"));
  m.def("probe_coverage", &ampdelta::python::ProbeCoverage, nb::arg("url"),
        nb::arg("auth_token").none(), nb::arg("sql"), nb::arg("block_column"),
        nb::call_guard<ampdelta::python::ReleasedGil>());
  // LoadOptions::stream_reorg_window_blocks: the reorg window when none is given.
  m.attr("DEFAULT_REORG_WINDOW_BLOCKS") =
      ampdelta::loader::LoadOptions{}.stream_reorg_window_blocks;
}
