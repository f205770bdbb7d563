#pragma once

// How the CLI's long-running commands (`load`, `query`) stop: SIGINT and SIGTERM set one
// flag that the engine polls (a stream stops after its last commit, a batch load before
// its commit, a query's DoGet is cancelled), and the command exits with the signal's
// code.

#include <atomic>

namespace ampdelta::cli {

/// \brief Route SIGINT and SIGTERM to StopFlag() and ignore SIGPIPE (a closed stdout is
/// noticed by StopIfStdoutClosed). Call first thing: a server may take minutes to plan,
/// and a stop must not wait for it.
void InstallStopHandlers();

/// \brief The flag the handlers set; hand it to the engine (LoadOptions::stop,
/// QueryOptions::stop).
std::atomic<bool>* StopFlag();

/// \brief Stop as if by SIGPIPE when stdout was closed (its reader went away).
void StopIfStdoutClosed();

/// \brief Watch stdout in the background and stop as if by SIGPIPE once its reader went
/// away (`| head`), also while nothing is being printed (a stream waiting for blocks).
void WatchStdoutReader();

/// \brief Whether a signal (or a closed stdout) asked for the stop.
bool StopRequested();

/// \brief The exit code for the stop: 130 for SIGINT, 143 for SIGTERM, 141 for a closed
/// stdout; `otherwise` when nothing asked for a stop.
int StopExitCode(int otherwise);

}  // namespace ampdelta::cli
