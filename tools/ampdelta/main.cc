// ampdelta: the command-line tool. stdout carries results only; diagnostics go to stderr.

#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <vector>

#include <arrow/memory_pool.h>

#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/version.h"
#include "commands.h"

namespace ampdelta::cli {

bool ParseStorageOptions(const std::vector<std::string>& entries,
                         std::map<std::string, std::string>* options, std::string* error) {
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& entry = entries[i];
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      // Not echoed: a mistyped entry may well hold a secret.
      *error = "--storage-option number " + std::to_string(i + 1) + " is not KEY=VALUE";
      return false;
    }
    (*options)[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  return true;
}

void PrintError(const std::string& message) {
  std::cerr << "ampdelta: error: " << message << std::endl;
}

void AddTimeoutOptions(CLI::App* command, std::chrono::milliseconds* plan,
                       std::chrono::milliseconds* idle) {
  // Seconds as a finite number in [0, one year]; zero turns the timeout off.
  auto seconds = [](std::chrono::milliseconds* target, const char* name) {
    return [target, name](const std::string& text) {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value) ||
          value < 0 || value > 365.0 * 86400.0) {
        throw CLI::ValidationError(name, "expects seconds between 0 and 31536000, got '" +
                                             text + "'");
      }
      *target = std::chrono::milliseconds(static_cast<int64_t>(value * 1000.0));
    };
  };
  command->add_option_function<std::string>("--plan-timeout", seconds(plan, "--plan-timeout"),
                                            "seconds the server may take to plan the query "
                                            "(GetFlightInfo; default 300)");
  if (idle != nullptr) {
    command->add_option_function<std::string>(
        "--idle-timeout", seconds(idle, "--idle-timeout"),
        "batch reads: fail when the server sends nothing for this many seconds "
        "(default 600; 0 waits forever)");
  }
}

int ExitCodeFor(ErrorClass error_class) {
  switch (error_class) {
    case ErrorClass::kInvalidInput:
      return kExitUsage;
    case ErrorClass::kServer:
      return kExitServer;
    case ErrorClass::kStorage:
      return kExitStorage;
    case ErrorClass::kConflict:
      return kExitConflict;
    case ErrorClass::kTable:
      return kExitTable;
    case ErrorClass::kInternal:
      return kExitFailure;
  }
  return kExitFailure;
}

int Fail(const arrow::Status& status) {
  PrintError(status.message());
  return ExitCodeFor(ClassifyError(status));
}

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"ampdelta: a native Delta Lake loader for Amp"};
  app.set_version_flag("--version", std::string("ampdelta ") + kVersion);
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "debug, info, warn, error or off")
      ->capture_default_str();

  std::vector<std::pair<CLI::App*, CommandRunner>> commands;
  auto add = [&](CommandRunner (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    CommandRunner runner = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(runner));
  };
  add(AddDevServerCommand);
  add(AddQueryCommand);
  add(AddLoadCommand);
  add(AddTableCommand);
  add(AddDemoCommand);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? kExitOk : kExitUsage;
  }
  log::Level level;
  if (!log::ParseLevel(log_level, &level)) {
    PrintError("unknown --log-level '" + log_level + "'");
    return kExitUsage;
  }
  log::SetLevel(level);
  AMPDELTA_LOG_DEBUG("memory pool: ", arrow::default_memory_pool()->backend_name());
  arrow::Status runtime = InitializeRuntime();
  if (!runtime.ok()) {
    PrintError(runtime.ToString());
    return kExitFailure;
  }
  for (auto& [command, runner] : commands) {
    if (command->parsed()) return runner();
  }
  return kExitUsage;
}

}  // namespace
}  // namespace ampdelta::cli

int main(int argc, char** argv) {
  // jemalloc keeps freed pages for reuse where mimalloc hands them back and the kernel zeroes
  // them again: writes spend ~30% less system time (docs/benchmarks.md). Must be chosen before
  // Arrow's first allocation; an explicit ARROW_DEFAULT_MEMORY_POOL wins.
  ::setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  try {
    return ampdelta::cli::Run(argc, argv);
  } catch (const std::exception& error) {
    ampdelta::cli::PrintError(std::string("internal error: ") + error.what());
    return ampdelta::cli::kExitFailure;
  }
}
