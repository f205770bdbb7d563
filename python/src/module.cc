// `ampdelta._native`: the extension behind the Python package (docs/python.md). It speaks
// JSON text with python/ampdelta/, which builds the SDK's objects and exceptions from it;
// no C++ exception crosses into Python, errors come back as an error JSON.

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/util/config.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "ampdelta/loader/config.h"
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

 private:
  std::unique_ptr<LoadJob> job_;
  std::optional<std::string> error_;
};

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
      .def("next", &PyLoadJob::Next, nb::arg("timeout_s"),
           nb::call_guard<nb::gil_scoped_release>())
      .def("ack", &PyLoadJob::Ack)
      .def("stop", &PyLoadJob::Stop)
      .def("join", &PyLoadJob::Join, nb::call_guard<nb::gil_scoped_release>());
  m.def("open_query_stream", &ampdelta::python::OpenQueryStream, nb::arg("url"),
        nb::arg("auth_token").none(), nb::arg("sql"));
  m.def("table_operation", &ampdelta::python::TableOperation, nb::arg("path"),
        nb::arg("storage_options_json"), nb::arg("operation"), nb::arg("args_json"),
        nb::call_guard<nb::gil_scoped_release>());
  m.def("validate_config", &ampdelta::python::ValidateConfig, nb::arg("config_json"));
}
