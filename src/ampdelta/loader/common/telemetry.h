#pragma once

/// \file telemetry.h
/// \brief What loads tell operators: the documented log events (connect, commit, reorg,
/// retry, compaction, stop; docs/operations.md) and the metrics they move in
/// metrics::Registry::Default(). Every function is thread-safe.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader::telemetry {

/// \brief Create the load's series at zero (a process about to be scraped: Prometheus
/// alerts on rates need the series before the first event).
void RegisterSeries();

/// \brief A query is open on the server (`server` already redacted).
void Connected(const std::string& server, const std::string& table, bool stream);
/// \brief The query ended or failed; the stream is not connected until the next
/// Connected().
void Disconnected();
/// \brief A message arrived from the server (data, marker or keep-alive).
void Heard();
/// \brief The newest ranges the server sent: the head block of each network.
void Received(const std::vector<amp::BlockRange>& ranges);
/// \brief A stream resumes after `cursor`: what the table holds is committed.
void Resumed(const amp::Cursor& cursor);

/// \brief A load's commit landed.
struct CommitFacts {
  std::string table;
  int64_t version = 0;
  int64_t rows = 0;
  int64_t files = 0;
  int64_t bytes = 0;
  double seconds = 0;
  /// The block ranges the commit records (streams), for the committed block and the lag.
  std::vector<amp::BlockRange> ranges;
};
void Committed(const CommitFacts& commit);

/// \brief A reorg was undone (or found nothing to undo: rows_removed 0).
void ReorgUndone(const std::string& table, int64_t version, const std::string& forks,
                 int64_t rows_removed, int64_t files_touched, double seconds);

/// \brief A failed step will be retried after `delay` (attempt counts from 1).
void Retrying(const arrow::Status& status, int attempt, int max_attempts,
              std::chrono::milliseconds delay);
/// \brief A step failed (whether it is retried or ends the load): counted by class.
void Failed(const arrow::Status& status);

/// \brief A compaction committed.
void Compacted(const std::string& table, int64_t version, int64_t files_removed,
               int64_t files_added);

/// \brief The process's load ended (`reason`: completed, stopped, failed), with the exit
/// code it leaves with.
void Stopped(const std::string& table, const std::string& reason, int64_t rows,
             int64_t commits, int exit_code);

}  // namespace ampdelta::loader::telemetry
