// ampdelta: the command-line tool. stdout carries results only; diagnostics go to stderr.

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <arrow/memory_pool.h>
#include <arrow/util/compression.h>

#include "ampdelta/delta/log/table_properties.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/util/utf8.h"
#include "ampdelta/version.h"
#include "commands.h"

namespace ampdelta::cli {

bool ParseStorageOptions(const std::vector<std::string>& entries,
                         std::map<std::string, std::string>* options,
                         std::string* error) {
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

arrow::Result<std::map<std::string, std::string>> ParsePropertyOptions(
    const std::vector<std::string>& entries) {
  std::map<std::string, std::string> properties;
  for (const auto& entry : entries) {
    if (!IsValidUtf8(entry)) {
      return InvalidInputError("--property '", EscapeNonUtf8(entry), "' is not UTF-8");
    }
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      return InvalidInputError("--property expects KEY=VALUE, got '", entry, "'");
    }
    const std::string key = entry.substr(0, equals);
    if (properties.count(key) != 0) {
      return InvalidInputError("--property ", key, " is given twice");
    }
    properties[key] = entry.substr(equals + 1);
  }
  return delta::NormalizeTableProperties(properties);
}

std::string OneLine(const std::string& message) {
  // Bytes that are not UTF-8 become \xNN; control characters (a newline in a key, a NUL
  // in a column name) are escaped too, so the error stays one readable line.
  return EscapeControls(EscapeNonUtf8(message));
}

void PrintError(const std::string& message) {
  if (log::GetFormat() == log::Format::kJson) {
    // Every stderr line is a JSON object in this format, the error included.
    const log::Fields fields = {{"message", OneLine(message)}};
    log::WriteToStderr(log::Record{log::Level::kError, "error", fields, {}});
    return;
  }
  std::cerr << "ampdelta: error: " << OneLine(message) << std::endl;
}

void AddSecondsOption(CLI::App* command, const std::string& name,
                      std::chrono::milliseconds* target, const std::string& description) {
  // Seconds as a finite number in [0, one year]; zero turns the timer off.
  command->add_option_function<std::string>(
      name,
      [target, name](const std::string& text) {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value) ||
            value < 0 || value > 365.0 * 86400.0) {
          throw CLI::ValidationError(
              name, "expects seconds between 0 and 31536000, got '" + text + "'");
        }
        *target = std::chrono::milliseconds(static_cast<int64_t>(value * 1000.0));
      },
      description);
}

void AddTimeoutOptions(CLI::App* command, std::chrono::milliseconds* plan,
                       std::chrono::milliseconds* idle) {
  AddSecondsOption(
      command, "--plan-timeout", plan,
      "seconds the server may take to plan the query (GetFlightInfo; default 300)");
  if (idle != nullptr) {
    AddSecondsOption(
        command, "--idle-timeout", idle,
        "fail when the server sends nothing for this many seconds in the middle "
        "of a batch result or inside a stream's microbatch (streams then "
        "reconnect; default 600; 0 waits forever)");
  }
}

namespace {

// Whole-text numbers only: no sign on unsigned values (strtoull wraps "-1" around), no
// trailing characters, nothing out of range.
bool ParseSigned(const std::string& text, int64_t* value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())))
    return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end != nullptr && *end == '\0';
}

bool ParseUnsigned(const std::string& text, uint64_t* value) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front())))
    return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtoull(text.c_str(), &end, 10);
  return errno == 0 && end != nullptr && *end == '\0';
}

}  // namespace

CLI::Validator IntegerIn(int64_t minimum, int64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        int64_t value = 0;
        if (!ParseSigned(text, &value)) return "expects an integer, got '" + text + "'";
        if (value < minimum || value > maximum) {
          return "must be between " + std::to_string(minimum) + " and " +
                 std::to_string(maximum) + ", got " + text;
        }
        return {};
      },
      "INT", "integer range");
}

CLI::Validator IntegerAtLeast(int64_t minimum) {
  return IntegerIn(minimum, std::numeric_limits<int64_t>::max());
}

CLI::Validator UnsignedAtLeast(uint64_t minimum, uint64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        uint64_t value = 0;
        if (!ParseUnsigned(text, &value)) {
          return "expects a non-negative integer, got '" + text + "'";
        }
        if (value < minimum || value > maximum) {
          return "must be between " + std::to_string(minimum) + " and " +
                 std::to_string(maximum) + ", got " + text;
        }
        return {};
      },
      "UINT", "unsigned range");
}

CLI::Validator FiniteNumberIn(double minimum, double maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value)) {
          return "expects a finite number, got '" + text + "'";
        }
        if (value < minimum || value > maximum) {
          std::ostringstream range;
          range << "must be between " << minimum << " and " << maximum << ", got "
                << text;
          return range.str();
        }
        return {};
      },
      "NUMBER", "finite range");
}

arrow::Status CheckCompressionLevel(const std::string& codec,
                                    const std::optional<int>& level, const char* option) {
  if (!level) return arrow::Status::OK();
  const std::string lower = AsciiLower(codec);
  arrow::Compression::type type = arrow::Compression::UNCOMPRESSED;
  if (lower == "zstd") {
    type = arrow::Compression::ZSTD;
  } else if (lower == "gzip") {
    type = arrow::Compression::GZIP;
  } else if (lower == "brotli") {
    type = arrow::Compression::BROTLI;
  } else if (lower == "lz4" || lower == "lz4_raw") {
    type = arrow::Compression::LZ4;
  } else if (lower == "snappy" || lower == "uncompressed" || lower == "none") {
    return InvalidInputError(option, " ", *level, ": codec '", codec,
                             "' has no compression levels");
  } else {
    return arrow::Status::OK();  // an unknown codec is reported where it is parsed
  }
  auto minimum = arrow::util::Codec::MinimumCompressionLevel(type);
  auto maximum = arrow::util::Codec::MaximumCompressionLevel(type);
  if (!minimum.ok() || !maximum.ok()) {
    return InvalidInputError(option, " ", *level, ": codec '", codec,
                             "' has no compression levels");
  }
  if (*level < *minimum || *level > *maximum) {
    return InvalidInputError(option, " ", *level, " is out of range for ", codec, " (",
                             *minimum, " to ", *maximum, ")");
  }
  return arrow::Status::OK();
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

// `--log-format json` anywhere before the command: the format errors in the other
// arguments are reported in, before CLI11 has parsed anything.
void PreselectLogFormat(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-format=json" || (arg == "--log-format" && i + 1 < argc &&
                                       std::string_view(argv[i + 1]) == "json")) {
      log::SetFormat(log::Format::kJson);
      return;
    }
    if (!arg.empty() && arg.front() != '-')
      return;  // the command: its own options follow
    if (arg == "--log-format" || arg == "--log-level") ++i;
  }
}

int Run(int argc, char** argv) {
  PreselectLogFormat(argc, argv);
  CLI::App app{"ampdelta: a native Delta Lake loader for Amp"};
  app.set_version_flag("--version", std::string("ampdelta ") + kVersion);
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "debug, info, warn, error or off")
      ->capture_default_str();
  std::string log_format = "text";
  app.add_option(
         "--log-format", log_format,
         "text (`[ampdelta info] event key=value …`) or json (one object per line: "
         "time, level, event, fields)")
      ->check(CLI::IsMember({"text", "json"}))
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
  add(AddVerifyCommand);

  // An unknown command is named (CLI11 only says that a subcommand is required).
  {
    CLI::App* current = &app;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if ((arg == "--log-level" || arg == "--log-format") && current == &app) {
        ++i;
        continue;
      }
      if (arg.empty() || arg.front() == '-') break;
      const auto subcommands = current->get_subcommands([](CLI::App*) { return true; });
      if (subcommands.empty()) break;
      CLI::App* next = nullptr;
      std::string names;
      for (CLI::App* subcommand : subcommands) {
        if (subcommand->get_name() == arg) next = subcommand;
        names += (names.empty() ? "" : ", ") + subcommand->get_name();
      }
      if (next == nullptr) {
        PrintError("unknown command '" + arg + "' (commands: " + names +
                   "; run with --help for usage)");
        return kExitUsage;
      }
      current = next;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version print and succeed; every other parse error is bad input,
    // reported as the one `ampdelta: error:` line.
    if (error.get_exit_code() == 0) return app.exit(error);
    PrintError(std::string(error.what()) + " (run with --help for usage)");
    return kExitUsage;
  }
  log::Level level;
  if (!log::ParseLevel(log_level, &level)) {
    PrintError("unknown --log-level '" + log_level + "'");
    return kExitUsage;
  }
  log::SetLevel(level);
  log::SetFormat(log_format == "json" ? log::Format::kJson : log::Format::kText);
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
  ampdelta::SelectDefaultMemoryPool();
  // gRPC's own log lines would break the one-line errors and JSON logs; every failure
  // reaches the user as a status instead (GRPC_VERBOSITY=ERROR brings them back).
  ::setenv("GRPC_VERBOSITY", "NONE", /*overwrite=*/0);
  try {
    return ampdelta::cli::Run(argc, argv);
  } catch (const std::exception& error) {
    ampdelta::cli::PrintError(std::string("internal error: ") + error.what());
    return ampdelta::cli::kExitFailure;
  }
}
