#include "stop_signals.h"

#include <csignal>
#include <iostream>

#include "commands.h"

namespace ampdelta::cli {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};  // the signal that asked for the stop

// Async-signal-safe: two lock-free atomic stores.
extern "C" void RequestStop(int signal) {
  g_signal.store(signal);
  g_stop.store(true);
}

}  // namespace

void InstallStopHandlers() {
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  std::signal(SIGPIPE, SIG_IGN);
}

std::atomic<bool>* StopFlag() { return &g_stop; }

void StopIfStdoutClosed() {
  if (std::cout.fail()) RequestStop(SIGPIPE);
}

bool StopRequested() { return g_signal.load() != 0; }

int StopExitCode(int otherwise) {
  switch (g_signal.load()) {
    case SIGINT:
      return kExitInterrupted;
    case SIGTERM:
      return kExitTerminated;
    case SIGPIPE:
      return kExitBrokenPipe;
    default:
      return otherwise;
  }
}

}  // namespace ampdelta::cli
