// `ampdelta._native`: the extension behind the Python package (docs/python.md). It speaks
// JSON text with python/ampdelta/, which builds the SDK's objects and exceptions from it;
// no C++ exception crosses into Python, errors come back as an error JSON.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/util/config.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nlohmann/json.hpp>

#include "ampdelta/amp/query_text.h"
#include "ampdelta/loader/backfill/coverage.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/version.h"
#include "events.h"
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
    auto job = LoadJob::Make(std::move(url), ClientOptionsFor(auth_token), std::move(sql),
                             config_json, options_json);
    if (job.ok()) {
      job_ = std::move(*job);
    } else {
      error_ = ErrorJson(job.status());
    }
  }

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
  std::unique_ptr<LoadJob> job_;
  std::optional<std::string> error_;
};

// Run `work` without the GIL. A daemon thread that wakes after the interpreter began to
// finalize must not take the GIL back: Python would end the thread with an unwind through
// nanobind's noexcept frames (std::terminate, exit 134). It parks instead; the process is
// exiting.
// The main thread, which finalizes the interpreter (and so never parks).
unsigned long g_main_thread = 0;

template <typename Work>
auto WithoutGil(Work&& work) {
  PyThreadState* state = PyEval_SaveThread();
  auto out = work();
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing() != 0;
#else
  const bool finalizing = _Py_IsFinalizing() != 0;
#endif
  if (finalizing && PyThread_get_thread_ident() != g_main_thread) {
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  PyEval_RestoreThread(state);
  return out;
}

void ReleaseStreamCapsule(void* pointer) noexcept {
  auto* stream = static_cast<ArrowArrayStream*>(pointer);
  if (stream->release != nullptr) stream->release(stream);
  delete stream;
}

// (capsule "arrow_array_stream", None) or (None, error JSON).
std::pair<nb::object, std::optional<std::string>> OpenQueryStream(
    const std::string& url, const std::optional<std::string>& auth_token,
    const std::string& sql) {
  auto stream = std::make_unique<ArrowArrayStream>();
  arrow::Status status;
  {
    nb::gil_scoped_release release;
    auto reader = OpenQueryReader(url, ClientOptionsFor(auth_token), sql);
    status = reader.ok() ? arrow::ExportRecordBatchReader(*reader, stream.get())
                         : reader.status();
  }
  if (!status.ok()) return {nb::none(), ErrorJson(status)};
  nb::capsule capsule(stream.release(), "arrow_array_stream", &ReleaseStreamCapsule);
  return {std::move(capsule), std::nullopt};
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
  ampdelta::python::g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  // Daemon threads still iterating a load when the interpreter exits keep their jobs:
  // expected, not a leak worth a warning.
  nb::set_leak_warnings(false);
  // Compute kernels and the TLS CA paths, as every ampdelta program sets them up.
  const arrow::Status runtime = ampdelta::InitializeRuntime();
  m.attr("runtime_error") =
      runtime.ok() ? nb::none() : nb::str(runtime.ToString().c_str());
  m.attr("ARROW_VERSION") = ARROW_VERSION_STRING;
  nb::class_<PyLoadJob>(m, "LoadJob", nb::is_weak_referenceable())
      .def(nb::init<std::string, std::optional<std::string>, std::string,
                    const std::string&, const std::string&>(),
           nb::arg("url"), nb::arg("auth_token").none(), nb::arg("sql"),
           nb::arg("config_json"), nb::arg("options_json"))
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
  m.def("table_operation", &ampdelta::python::TableOperation, nb::arg("path"),
        nb::arg("storage_options_json"), nb::arg("operation"), nb::arg("args_json"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("refuse_new_loads", &ampdelta::python::LoadJob::RefuseNewLoads);
  m.def("validate_config", &ampdelta::python::ValidateConfig, nb::arg("config_json"));
  m.def("probe_coverage", &ampdelta::python::ProbeCoverage, nb::arg("url"),
        nb::arg("auth_token").none(), nb::arg("sql"), nb::arg("block_column"),
        nb::call_guard<nb::gil_scoped_release>());
  // LoadOptions::stream_reorg_window_blocks: the reorg window when none is given.
  m.attr("DEFAULT_REORG_WINDOW_BLOCKS") =
      ampdelta::loader::LoadOptions{}.stream_reorg_window_blocks;
}
