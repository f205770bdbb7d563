#include "ampdelta/loader/common/telemetry.h"

#include <algorithm>
#include <map>

#include "ampdelta/util/logging.h"
#include "ampdelta/util/metrics.h"

namespace ampdelta::loader::telemetry {
namespace {

using metrics::Registry;

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One accessor per metric, so a name and its help text are written once.
metrics::Gauge& Connection() {
  static metrics::Gauge& gauge = Registry::Default().GetGauge(
      "ampdelta_connected", "1 while a query is open on the Amp server, else 0.");
  return gauge;
}
metrics::Gauge& LastHeard() {
  static metrics::Gauge& gauge = Registry::Default().GetGauge(
      "ampdelta_last_message_timestamp_seconds",
      "When the last message from the Amp server arrived (unix seconds).");
  return gauge;
}
metrics::Counter& RowsLoaded() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_rows_loaded_total", "Rows committed into Delta tables by loads.");
  return counter;
}
metrics::Counter& BytesWritten() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_bytes_written_total",
      "Bytes of data files committed into Delta tables by loads.");
  return counter;
}
metrics::Counter& FilesWritten() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_files_written_total", "Data files committed into Delta tables by loads.");
  return counter;
}
metrics::Counter& Commits() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_commits_total", "Commits of loads that loaded rows.");
  return counter;
}
metrics::Histogram& CommitLatency() {
  static metrics::Histogram& histogram = Registry::Default().GetHistogram(
      "ampdelta_commit_duration_seconds",
      "Time to close a commit's data files, commit them and read the commit back.",
      metrics::DurationBuckets());
  return histogram;
}
metrics::Gauge& LastCommit() {
  static metrics::Gauge& gauge = Registry::Default().GetGauge(
      "ampdelta_last_commit_timestamp_seconds",
      "When the last commit of a load landed (unix seconds).");
  return gauge;
}
metrics::Counter& Reorgs() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_reorgs_total", "Reorgs the stream saw (undone or with nothing to undo).");
  return counter;
}
metrics::Counter& RowsUndone() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_rows_undone_total", "Rows removed by reorg undos.");
  return counter;
}
metrics::Counter& Compactions() {
  static metrics::Counter& counter = Registry::Default().GetCounter(
      "ampdelta_compactions_total", "Compactions committed by loads.");
  return counter;
}
metrics::Counter& Errors(const std::string& error_class) {
  return Registry::Default().GetCounter(
      "ampdelta_errors_total",
      "Failed steps, retried or not, by error class (invalid_input, server, storage, "
      "conflict, table, internal).",
      {{"class", error_class}});
}
metrics::Gauge& HeadBlock(const std::string& network) {
  return Registry::Default().GetGauge("ampdelta_head_block",
                                      "The newest block the Amp server has sent.",
                                      {{"network", network}});
}
metrics::Gauge& CommittedBlock(const std::string& network) {
  return Registry::Default().GetGauge(
      "ampdelta_committed_block", "The newest block committed.", {{"network", network}});
}
metrics::Gauge& LagBlocks(const std::string& network) {
  return Registry::Default().GetGauge(
      "ampdelta_lag_blocks",
      "Blocks the server has sent beyond the last committed block.",
      {{"network", network}});
}
metrics::Gauge& LagSeconds(const std::string& network) {
  return Registry::Default().GetGauge(
      "ampdelta_lag_seconds",
      "Age of the newest committed block (now minus its block time).",
      {{"network", network}});
}

// The newest end of each network's ranges.
std::map<std::string, const amp::BlockRange*> Newest(
    const std::vector<amp::BlockRange>& ranges) {
  std::map<std::string, const amp::BlockRange*> newest;
  for (const auto& range : ranges) {
    const amp::BlockRange*& best = newest[range.network];
    if (best == nullptr || range.end > best->end) best = &range;
  }
  return newest;
}

void RaiseHead(const std::string& network, uint64_t block) {
  auto& head = HeadBlock(network);
  head.Set(std::max(head.value(), static_cast<double>(block)));
}

// Head minus committed, once both are known.
void UpdateLag(const std::string& network) {
  const double committed = CommittedBlock(network).value();
  if (committed <= 0) return;  // nothing committed or resumed from yet
  LagBlocks(network).Set(std::max(0.0, HeadBlock(network).value() - committed));
}

constexpr ErrorClass kErrorClasses[] = {ErrorClass::kInvalidInput, ErrorClass::kServer,
                                        ErrorClass::kStorage,      ErrorClass::kConflict,
                                        ErrorClass::kTable,        ErrorClass::kInternal};

}  // namespace

void RegisterSeries() {
  Connection();
  LastHeard();
  RowsLoaded();
  BytesWritten();
  FilesWritten();
  Commits();
  CommitLatency();
  LastCommit();
  Reorgs();
  RowsUndone();
  Compactions();
  for (ErrorClass error_class : kErrorClasses) {
    Errors(ErrorClassName(error_class));
    metrics::RetriesCounter(ErrorClassName(error_class));
  }
}

void Connected(const std::string& server, const std::string& table, bool stream) {
  Connection().Set(1);
  LastHeard().Set(Now());
  log::Event(log::Level::kInfo, "connect",
             {{"server", server}, {"table", table}, {"stream", stream}});
}

void Disconnected() { Connection().Set(0); }

void Heard() { LastHeard().Set(Now()); }

void Received(const std::vector<amp::BlockRange>& ranges) {
  for (const auto& [network, range] : Newest(ranges)) {
    RaiseHead(network, range->end);
    UpdateLag(network);
  }
}

void Resumed(const amp::Cursor& cursor) {
  for (const auto& [network, entry] : cursor) {
    CommittedBlock(network).Set(static_cast<double>(entry.number));
    UpdateLag(network);
  }
}

void Committed(const CommitFacts& commit) {
  RowsLoaded().Increment(static_cast<double>(commit.rows));
  BytesWritten().Increment(static_cast<double>(commit.bytes));
  FilesWritten().Increment(static_cast<double>(commit.files));
  Commits().Increment();
  CommitLatency().Observe(commit.seconds);
  LastCommit().Set(Now());
  std::string blocks;
  for (const auto& [network, range] : Newest(commit.ranges)) {
    CommittedBlock(network).Set(static_cast<double>(range->end));
    if (range->timestamp) {
      LagSeconds(network).Set(
          std::max(0.0, Now() - static_cast<double>(*range->timestamp)));
    }
    RaiseHead(network, range->end);
    UpdateLag(network);
    blocks += (blocks.empty() ? "" : ",") + network + ":" + std::to_string(range->end);
  }
  log::Fields fields = {
      {"table", commit.table}, {"version", commit.version},
      {"rows", commit.rows},   {"files", commit.files},
      {"bytes", commit.bytes}, {"ms", static_cast<int64_t>(commit.seconds * 1000)}};
  if (!blocks.empty()) fields.emplace_back("head", blocks);
  log::Event(log::Level::kInfo, "commit", fields);
}

void ReorgUndone(const std::string& table, int64_t version, const std::string& forks,
                 int64_t rows_removed, int64_t files_touched, double seconds) {
  Reorgs().Increment();
  RowsUndone().Increment(static_cast<double>(rows_removed));
  log::Event(log::Level::kInfo, "reorg",
             {{"table", table},
              {"version", version},
              {"forks", forks},
              {"rows_removed", rows_removed},
              {"files_touched", files_touched},
              {"ms", static_cast<int64_t>(seconds * 1000)}});
}

void Retrying(const arrow::Status& status, int attempt, int max_attempts,
              std::chrono::milliseconds delay) {
  const char* error_class = ErrorClassName(ClassifyError(status));
  metrics::RetriesCounter(error_class).Increment();
  log::Event(log::Level::kWarn, "retry",
             {{"class", error_class},
              {"attempt", attempt},
              {"max_attempts", max_attempts},
              {"delay_ms", static_cast<int64_t>(delay.count())},
              {"error", status.message()}});
}

void Failed(const arrow::Status& status) {
  Errors(ErrorClassName(ClassifyError(status))).Increment();
}

void Compacted(const std::string& table, int64_t version, int64_t files_removed,
               int64_t files_added) {
  Compactions().Increment();
  log::Event(log::Level::kInfo, "compaction",
             {{"table", table},
              {"version", version},
              {"files_removed", files_removed},
              {"files_added", files_added}});
}

void Stopped(const std::string& table, const std::string& reason, int64_t rows,
             int64_t commits, int exit_code) {
  Disconnected();
  log::Event(log::Level::kInfo, "stop",
             {{"table", table},
              {"reason", reason},
              {"rows", rows},
              {"commits", commits},
              {"exit_code", exit_code}});
}

}  // namespace ampdelta::loader::telemetry
