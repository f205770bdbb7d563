#pragma once

/// \file load_job.h
/// \brief A load running on its own thread, handing its results to Python one at a time.
///
/// Python pulls results with Next() (the GIL released while it waits) and calls Ack()
/// once it has handled one; the loader waits for that acknowledgement before going on, as
/// a generator waits for its consumer. So a Python exception in a progress callback or a
/// loop body (or Ctrl-C) always reaches the loader, through Stop(), before the load's
/// next step: a batch load then commits nothing, a stream stops after the commit it just
/// reported. The loader thread never touches Python objects.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/amp/fed_stream.h"
#include "ampdelta/loader/batch/batch_loader.h"

namespace ampdelta::python {

class LoadJob {
 public:
  /// \brief Validate `options_json` (docs/python.md's load() keywords, as the Python
  /// layer passes them) and `config_json` (a `deltalake` connection) without starting
  /// anything.
  static arrow::Result<std::unique_ptr<LoadJob>> Make(std::string url,
                                                      amp::ClientOptions client_options,
                                                      std::string sql,
                                                      const std::string& config_json,
                                                      const std::string& options_json);
  /// \brief A batch load of Arrow data handed over from Python (load_table of a table, a
  /// DataFrame or a reader): `data` is read on the loader thread, once. Stream and
  /// parallel options are refused: they need a query.
  static arrow::Result<std::unique_ptr<LoadJob>> MakeForData(
      std::shared_ptr<arrow::RecordBatchReader> data, const std::string& config_json,
      const std::string& options_json);
  /// \brief A stream load of messages another client reads and hands over through
  /// `channel` (the SDK's load_stream_continuous). `label` stands for the query: it names
  /// the stream's progress in the table, so a load with the same label resumes it.
  static arrow::Result<std::unique_ptr<LoadJob>> MakeForChannel(
      std::shared_ptr<amp::FedChannel> channel, std::string label,
      const std::string& config_json, const std::string& options_json);
  ~LoadJob();

  /// \brief Start the loader thread (once). After RefuseNewLoads it ends the job at once
  /// with an error instead.
  void Start();
  /// \brief From now on no job starts a thread (the interpreter is exiting: threads it
  /// does not join would outlive the libraries they use).
  static void RefuseNewLoads();
  /// \brief The next event's JSON (events.h): a result per batch, partition, commit or
  /// reorg, then one "final" result; nullopt after `timeout_ms` without one; "" when the
  /// final event has been taken.
  std::optional<std::string> Next(int64_t timeout_ms);
  /// \brief Let the loader go past the events taken so far.
  void Ack();
  /// \brief Stop after the current step (a batch load commits nothing); queries being
  /// read are cancelled, so a stalled server cannot hold the stop.
  void Stop();
  /// \brief Wait for the loader thread to end; any number of threads may call it.
  void Join();
  /// \brief Join if the loader ends within `timeout_ms`; false if it is still running.
  bool JoinFor(int64_t timeout_ms);

  struct Plan;

 private:
  LoadJob(std::string url, amp::ClientOptions client_options, std::string sql);
  void Run();
  /// Hand Python the final result and mark the job finished.
  void Finish(const loader::LoadResult& result);
  /// Queue an event; with `wait`, block until Python has acknowledged it (or Stop()).
  void Emit(std::string event, bool wait);

  std::string url_;
  amp::ClientOptions client_options_;
  std::string sql_;
  /// Set for a load of Arrow data (MakeForData), which runs no query.
  std::shared_ptr<arrow::RecordBatchReader> data_;
  /// Set for a stream handed over message by message (MakeForChannel).
  std::shared_ptr<amp::FedChannel> channel_;
  std::unique_ptr<Plan> plan_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> events_;
  int64_t emitted_ = 0;
  int64_t acked_ = 0;
  bool finished_ = false;
  std::atomic<bool> stop_{false};
  loader::QueryCancellation cancellation_;
  std::mutex join_mutex_;  // one thread joins, the others wait for it
  std::thread thread_;
};

}  // namespace ampdelta::python
