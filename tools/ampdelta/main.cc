// ampdelta: the command-line tool. stdout carries results only; diagnostics go to stderr.

#include <exception>
#include <iostream>
#include <vector>

#include "ampdelta/util/logging.h"
#include "ampdelta/util/runtime.h"
#include "ampdelta/version.h"
#include "commands.h"

namespace ampdelta::cli {

void PrintError(const std::string& message) {
  std::cerr << "ampdelta: error: " << message << std::endl;
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
  try {
    return ampdelta::cli::Run(argc, argv);
  } catch (const std::exception& error) {
    ampdelta::cli::PrintError(std::string("internal error: ") + error.what());
    return ampdelta::cli::kExitFailure;
  }
}
