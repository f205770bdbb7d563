#pragma once

/// \file commands.h
/// \brief The CLI's subcommands. Each registers its options on the app and returns the
/// exit code through a callback set on the subcommand.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ampdelta::cli {

/// \brief Exit codes: 0 success, 1 failure of the operation, 2 usage error.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

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

/// \brief Parse repeated `--storage-option KEY=VALUE` values into `options` (later ones
/// win); returns false and sets `error` for an entry without `=`.
bool ParseStorageOptions(const std::vector<std::string>& entries,
                         std::map<std::string, std::string>* options, std::string* error);

/// \brief The help text of `--storage-option`.
inline constexpr const char* kStorageOptionHelp =
    "KEY=VALUE store option, as deltalake's storage_options (e.g. AWS_ENDPOINT_URL=...); "
    "repeatable; unset keys are read from the environment";

/// \brief Print `ampdelta: error: <message>` on stderr.
void PrintError(const std::string& message);

}  // namespace ampdelta::cli
