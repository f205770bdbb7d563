#include "ampdelta/loader/telemetry.h"

#include <algorithm>
#include <ctime>
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

metrics::Gauge& ConnectedGauge() {
  static metrics::Gauge& gauge = Registry::Default().GetGauge(
      "ampdelta_connected", "1 while a query is open on the Amp server, else 0.");
  return gauge;
}

metrics::Gauge& LastHeardGauge() {
  static metrics::Gauge& gauge = Registry::Default().GetGauge(
      "ampdelta_last_message_timestamp_seconds",
      "When the last message from the Amp server arrived (unix seconds).");
  return gauge;
}

metrics::Gauge& NetworkGauge(const char* name, const char* help,
                             const std::string& network) {
  return Registry::Default().GetGauge(name, help, {{"network", network}});
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

metrics::Gauge& CommittedGauge(const std::string& network) {
  return NetworkGauge("ampdelta_committed_block", "The newest block committed.", network);
}

// Head minus committed, once both are known.
void UpdateLag(const std::string& network) {
  const double head =
      Registry::Default().Value("ampdelta_head_block", {{"network", network}});
  const double committed = CommittedGauge(network).value();
  if (committed <= 0) return;  // nothing committed or resumed from yet
  NetworkGauge("ampdelta_lag_blocks",
               "Blocks the server has sent beyond the last committed block.", network)
      .Set(std::max(0.0, head - committed));
}

}  // namespace

void Connected(const std::string& server, const std::string& table, bool stream) {
  ConnectedGauge().Set(1);
  LastHeardGauge().Set(Now());
  log::Event(
      log::Level::kInfo, "connect",
      {{"server", server}, {"table", table}, {"stream", stream ? "true" : "false"}});
}

void Disconnected() { ConnectedGauge().Set(0); }

void Heard() { LastHeardGauge().Set(Now()); }

void Received(const std::vector<amp::BlockRange>& ranges) {
  for (const auto& [network, range] : Newest(ranges)) {
    auto& head = NetworkGauge("ampdelta_head_block",
                              "The newest block the Amp server has sent.", network);
    head.Set(std::max(head.value(), static_cast<double>(range->end)));
    UpdateLag(network);
  }
}

void Resumed(const amp::Cursor& cursor) {
  for (const auto& [network, entry] : cursor) {
    CommittedGauge(network).Set(static_cast<double>(entry.number));
    UpdateLag(network);
  }
}

void Committed(const CommitFacts& commit) {
  Registry& registry = Registry::Default();
  static metrics::Counter& rows = registry.GetCounter(
      "ampdelta_rows_loaded_total", "Rows committed into Delta tables by loads.");
  static metrics::Counter& bytes =
      registry.GetCounter("ampdelta_bytes_written_total",
                          "Bytes of data files committed into Delta tables by loads.");
  static metrics::Counter& commits =
      registry.GetCounter("ampdelta_commits_total", "Commits of loads.");
  static metrics::Counter& files = registry.GetCounter(
      "ampdelta_files_written_total", "Data files committed into Delta tables by loads.");
  static metrics::Histogram& latency = registry.GetHistogram(
      "ampdelta_commit_duration_seconds",
      "Time to close a commit's data files, commit them and read the commit back.",
      metrics::DurationBuckets());
  static metrics::Gauge& last_commit =
      registry.GetGauge("ampdelta_last_commit_timestamp_seconds",
                        "When the last commit of a load landed (unix seconds).");
  rows.Increment(static_cast<double>(commit.rows));
  bytes.Increment(static_cast<double>(commit.bytes));
  files.Increment(static_cast<double>(commit.files));
  commits.Increment();
  latency.Observe(commit.seconds);
  last_commit.Set(Now());
  std::string blocks;
  for (const auto& [network, range] : Newest(commit.ranges)) {
    CommittedGauge(network).Set(static_cast<double>(range->end));
    if (range->timestamp) {
      NetworkGauge("ampdelta_lag_seconds",
                   "Age of the newest committed block (now minus its block time).",
                   network)
          .Set(std::max(0.0, Now() - static_cast<double>(*range->timestamp)));
    }
    auto& head = NetworkGauge("ampdelta_head_block",
                              "The newest block the Amp server has sent.", network);
    head.Set(std::max(head.value(), static_cast<double>(range->end)));
    UpdateLag(network);
    blocks += (blocks.empty() ? "" : ",") + network + ":" + std::to_string(range->end);
  }
  log::Fields fields = {
      {"table", commit.table},
      {"version", std::to_string(commit.version)},
      {"rows", std::to_string(commit.rows)},
      {"files", std::to_string(commit.files)},
      {"bytes", std::to_string(commit.bytes)},
      {"ms", std::to_string(static_cast<int64_t>(commit.seconds * 1000))}};
  if (!blocks.empty()) fields.emplace_back("head", blocks);
  log::Event(log::Level::kInfo, "commit", fields);
}

void ReorgUndone(const std::string& table, int64_t version, const std::string& forks,
                 int64_t rows_removed, int64_t files_touched, double seconds) {
  static metrics::Counter& reorgs = Registry::Default().GetCounter(
      "ampdelta_reorgs_total", "Reorgs the stream saw (undone or with nothing to undo).");
  static metrics::Counter& undone = Registry::Default().GetCounter(
      "ampdelta_rows_undone_total", "Rows removed by reorg undos.");
  reorgs.Increment();
  undone.Increment(static_cast<double>(rows_removed));
  log::Event(log::Level::kInfo, "reorg",
             {{"table", table},
              {"version", std::to_string(version)},
              {"forks", forks},
              {"rows_removed", std::to_string(rows_removed)},
              {"files_touched", std::to_string(files_touched)},
              {"ms", std::to_string(static_cast<int64_t>(seconds * 1000))}});
}

void Retrying(const arrow::Status& status, int attempt, std::chrono::milliseconds delay) {
  const char* error_class = ErrorClassName(ClassifyError(status));
  metrics::RetriesCounter(error_class).Increment();
  log::Event(log::Level::kWarn, "retry",
             {{"class", error_class},
              {"attempt", std::to_string(attempt)},
              {"delay_ms", std::to_string(delay.count())},
              {"error", status.message()}});
}

void Failed(const arrow::Status& status) {
  const metrics::Labels labels = {{"class", ErrorClassName(ClassifyError(status))}};
  Registry::Default()
      .GetCounter("ampdelta_errors_total",
                  "Failed steps, retried or not, by error class (invalid_input, server, "
                  "storage, conflict, table, internal).",
                  labels)
      .Increment();
}

void Compacted(const std::string& table, int64_t version, int64_t files_removed,
               int64_t files_added) {
  static metrics::Counter& compactions = Registry::Default().GetCounter(
      "ampdelta_compactions_total", "Compactions committed by loads.");
  compactions.Increment();
  log::Event(log::Level::kInfo, "compaction",
             {{"table", table},
              {"version", std::to_string(version)},
              {"files_removed", std::to_string(files_removed)},
              {"files_added", std::to_string(files_added)}});
}

void Stopped(const std::string& table, const std::string& reason, int64_t rows,
             int64_t commits, int exit_code) {
  Disconnected();
  log::Event(log::Level::kInfo, "stop",
             {{"table", table},
              {"reason", reason},
              {"rows", std::to_string(rows)},
              {"commits", std::to_string(commits)},
              {"exit_code", std::to_string(exit_code)}});
}

}  // namespace ampdelta::loader::telemetry
