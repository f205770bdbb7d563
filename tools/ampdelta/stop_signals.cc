#include "stop_signals.h"

#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

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

void WatchStdoutReader() {
  // A pipe whose reader closed reports POLLERR on its write end (a file or a terminal
  // reports nothing): the stop comes within a poll, with nothing written.
  std::thread([] {
    while (!g_stop.load()) {
      pollfd out{STDOUT_FILENO, 0, 0};
      if (::poll(&out, 1, 200) > 0 && (out.revents & (POLLERR | POLLHUP)) != 0) {
        RequestStop(SIGPIPE);
        return;
      }
    }
  }).detach();
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
