#pragma once

/// \file commands.h
/// \brief The CLI's subcommands. Each registers its options on the app and returns the
/// exit code through a callback set on the subcommand.

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/util/status.h"

namespace ampdelta::cli {

/// \brief Exit codes, one per ErrorClass (README "Exit codes").
inline constexpr int kExitOk = 0;
/// An internal or unclassified failure.
inline constexpr int kExitFailure = 1;
/// Bad input: usage, options, configuration, table path, predicate, schema.
inline constexpr int kExitUsage = 2;
/// The Amp server or the transport to it failed, or broke its protocol.
inline constexpr int kExitServer = 3;
/// The object store failed (disk full, read-only, permissions, HTTP errors).
inline constexpr int kExitStorage = 4;
/// A concurrent commit conflicted and retrying did not help.
inline constexpr int kExitConflict = 5;
/// The table uses features ampdelta cannot write, or its log is damaged.
inline constexpr int kExitTable = 6;
/// `ampdelta verify` found problems in the table.
inline constexpr int kExitFindings = 7;
/// A load stopped by SIGINT (128 + 2) or SIGTERM (128 + 15) after its last commit, as
/// shells report a process a signal ended.
inline constexpr int kExitInterrupted = 130;
inline constexpr int kExitTerminated = 143;
/// A stream whose stdout was closed (`| head`) stopped after its last commit (128 + 13).
inline constexpr int kExitBrokenPipe = 141;

/// \brief Return the exit code of an error class.
int ExitCodeFor(ErrorClass error_class);

/// \brief Print `ampdelta: error: <message>` for a failed status and return its exit
/// code.
int Fail(const arrow::Status& status);

/// \brief A registered subcommand: runs when selected and returns the exit code.
using CommandRunner = std::function<int()>;

/// \brief `ampdelta dev-server`.
CommandRunner AddDevServerCommand(CLI::App& app);
/// \brief `ampdelta query`.
CommandRunner AddQueryCommand(CLI::App& app);
/// \brief `ampdelta load`.
CommandRunner AddLoadCommand(CLI::App& app);
/// \brief `ampdelta table …`.
CommandRunner AddTableCommand(CLI::App& app);
/// \brief `ampdelta demo`.
CommandRunner AddDemoCommand(CLI::App& app);
/// \brief `ampdelta verify`.
CommandRunner AddVerifyCommand(CLI::App& app);

/// \brief Parse repeated `--storage-option KEY=VALUE` values into `options` (later ones
/// win); returns false and sets `error` for an entry without `=`.
bool ParseStorageOptions(const std::vector<std::string>& entries,
                         std::map<std::string, std::string>* options, std::string* error);

/// \brief Parse repeated `--property KEY=VALUE` values (table properties, later ones win)
/// and check them (delta::ValidateTableProperties); kInvalidInput names a bad entry.
arrow::Result<std::map<std::string, std::string>> ParsePropertyOptions(
    const std::vector<std::string>& entries);

/// \brief The help text of `--storage-option`.
inline constexpr const char* kStorageOptionHelp =
    "KEY=VALUE store option, as deltalake's storage_options (e.g. AWS_ENDPOINT_URL=...); "
    "repeatable; unset keys are read from the environment";

/// \brief Add `--plan-timeout` and `--idle-timeout` (seconds) to a command that talks to
/// an Amp server; `idle` may be null for commands without a batch read.
void AddTimeoutOptions(CLI::App* command, std::chrono::milliseconds* plan,
                       std::chrono::milliseconds* idle);

/// \brief Add an option taking seconds (a finite number in [0, one year]; 0 turns the
/// timer off) into `target`.
void AddSecondsOption(CLI::App* command, const std::string& name,
                      std::chrono::milliseconds* target, const std::string& description);

/// \brief CLI11 validators for numeric options. They take the whole text only (no
/// trailing characters, no sign on unsigned values, which strtoull would wrap around),
/// and their errors name the option and the value.
CLI::Validator IntegerIn(int64_t minimum, int64_t maximum);
CLI::Validator IntegerAtLeast(int64_t minimum);
CLI::Validator UnsignedAtLeast(uint64_t minimum,
                               uint64_t maximum = std::numeric_limits<uint64_t>::max());
CLI::Validator FiniteNumberIn(double minimum, double maximum);

/// \brief Return an error naming `option` unless `level` (when given) is a compression
/// level of `codec`: Arrow's range for zstd, gzip, brotli and lz4; none for the others.
arrow::Status CheckCompressionLevel(const std::string& codec,
                                    const std::optional<int>& level,
                                    const char* option = "--compression-level");

/// \brief Return `message` as one line of UTF-8: bytes that are not UTF-8 and control
/// characters (newline, NUL, ...) written as escapes.
std::string OneLine(const std::string& message);

/// \brief Print `ampdelta: error: <message>` on stderr, as one line (see OneLine).
void PrintError(const std::string& message);

}  // namespace ampdelta::cli
