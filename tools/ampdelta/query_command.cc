// `ampdelta query`: run SQL on an Amp server and print what came back.

#include <iostream>
#include <memory>
#include <thread>

#include <arrow/record_batch.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/amp/stream_interpreter.h"
#include "commands.h"
#include "stop_signals.h"
#include "table_format.h"

namespace ampdelta::cli {
namespace {

struct QueryArgs {
  std::string server = "grpc://localhost:1602";
  std::string sql;
  std::string token;
  std::string resume;
  bool stream = false;
  std::string format = "table";
  int64_t max_rows = 20;
  uint64_t max_microbatches = 0;
  std::chrono::milliseconds plan_timeout{std::chrono::minutes(5)};
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
};

// The ranges as `query` shows them: network[start..end] each, [] for none.
std::string ShownRanges(const std::vector<amp::BlockRange>& ranges) {
  if (ranges.empty()) return "[]";
  std::string out;
  for (const auto& range : ranges) out += (out.empty() ? "" : ",") + range.ToString();
  return out;
}

// The next message; std::nullopt at the end of the stream or once a signal stopped it
// (the summary of what was read still prints).
arrow::Result<std::optional<amp::ResponseBatch>> NextUnlessStopped(
    amp::QueryStream& stream) {
  auto message = stream.Next();
  if (!message.ok() && StopRequested()) return std::nullopt;
  return message;
}

arrow::Status RunBatch(amp::QueryStream& stream, const QueryArgs& args) {
  int64_t rows = 0;
  int64_t messages = 0;
  bool complete = false;
  std::vector<amp::BlockRange> ranges;
  std::vector<std::vector<std::string>> shown;
  // CSV (RFC 4180): the header, then one record per row; stdout holds nothing else.
  if (args.format == "csv") std::cout << CsvHeader(*stream.schema());
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto message, NextUnlessStopped(stream));
    if (!message) break;
    ++messages;
    const arrow::RecordBatch& batch = *message->data;
    if (message->has_metadata) {
      ranges = message->metadata.ranges;
      complete = complete || message->metadata.ranges_complete;
    }
    for (int64_t i = 0;
         i < batch.num_rows() && static_cast<int64_t>(shown.size()) < args.max_rows;
         ++i) {
      auto formatted = FormatRows(batch, {i});
      shown.push_back(std::move(formatted.front()));
    }
    if (args.format == "csv") std::cout << CsvRecords(batch) << std::flush;
    rows += batch.num_rows();
    StopIfStdoutClosed();
    if (StopRequested()) break;
  }
  if (args.format == "table") std::cout << FormatTable(stream.schema(), shown);
  if (args.format == "table" && rows > static_cast<int64_t>(shown.size())) {
    std::cout << "(" << rows - static_cast<int64_t>(shown.size()) << " more rows)\n";
  }
  // With CSV on stdout, the summary goes to stderr, where it cannot break the CSV.
  std::ostream& summary = args.format == "csv" ? std::cerr : std::cout;
  if (args.format == "csv") std::cout.flush();
  summary << "rows=" << rows << " messages=" << messages
          << " ranges=" << ShownRanges(ranges)
          << " ranges_complete=" << (complete ? "true" : "false") << std::endl;
  return arrow::Status::OK();
}

arrow::Status RunStream(amp::QueryStream& stream, const QueryArgs& args,
                        const std::optional<amp::Cursor>& resume) {
  amp::StreamInterpreter interpreter;
  if (resume) interpreter.SeedCursor(*resume);
  uint64_t completed = 0;
  int64_t microbatch_rows = 0;
  while (args.max_microbatches == 0 || completed < args.max_microbatches) {
    ARROW_ASSIGN_OR_RAISE(auto message, NextUnlessStopped(stream));
    if (!message) break;
    ARROW_ASSIGN_OR_RAISE(
        amp::StreamEvent event,
        interpreter.Accept(message->metadata, message->data->num_rows()));
    if (event.is_reorg()) {
      std::cout << (event.partial_reorg ? "partial reorg" : "reorg")
                << " invalidated=" << ShownRanges(event.invalidated);
      if (event.resume_cursor)
        std::cout << " resume=" << amp::CursorToJson(*event.resume_cursor);
      std::cout << std::endl;
      if (event.partial_reorg) break;
    }
    microbatch_rows += message->data->num_rows();
    if (event.kind == amp::StreamEvent::Kind::kMicrobatchEnd) {
      ++completed;
      std::cout << "microbatch " << ShownRanges(event.ranges)
                << " rows=" << microbatch_rows;
      if (!event.ranges.empty()) std::cout << " hash=" << event.ranges.back().hash;
      std::cout << std::endl;
      microbatch_rows = 0;
    }
    // A reader that went away (`| head`) ends the stream: 141, as for `load`.
    StopIfStdoutClosed();
    if (StopRequested()) break;
  }
  std::cout << "microbatches=" << completed
            << " cursor=" << amp::CursorToJson(interpreter.CompletedCursor())
            << std::endl;
  return arrow::Status::OK();
}

int RunQuery(const QueryArgs& args) {
  InstallStopHandlers();
  WatchStdoutReader();
  amp::ClientOptions options;
  if (!args.token.empty()) options.auth_token = args.token;
  options.plan_timeout = args.plan_timeout;
  auto client = amp::Client::Connect(args.server, options);
  if (!client.ok()) return Fail(client.status());
  amp::QueryOptions query_options;
  if (args.stream) query_options.stream = true;
  if (!args.stream) query_options.idle_timeout = args.idle_timeout;
  if (!args.resume.empty()) {
    auto cursor = amp::ParseCursor(args.resume);
    if (!cursor.ok()) {
      PrintError(cursor.status().message());
      return kExitUsage;
    }
    query_options.resume = *cursor;
  }
  // SIGINT/SIGTERM cancel the call (a batch read as well as a stream): the reader ends,
  // what was read is summed up, and the exit code says which signal stopped it.
  query_options.stop = StopFlag();
  query_options.stop_cancels_reads = true;
  auto stream = (*client)->Query(args.sql, query_options);
  if (!stream.ok())
    return StopRequested() ? StopExitCode(kExitOk) : Fail(stream.status());
  arrow::Status status = args.stream || args.max_microbatches > 0
                             ? RunStream(**stream, args, query_options.resume)
                             : RunBatch(**stream, args);
  if (!status.ok() && !StopRequested()) return Fail(status);
  return StopExitCode(kExitOk);
}

}  // namespace

CommandRunner AddQueryCommand(CLI::App& app) {
  auto args = std::make_shared<QueryArgs>();
  CLI::App* cmd =
      app.add_subcommand("query", "Run SQL on an Amp server and print the result");
  cmd->add_option("--server", args->server, "grpc:// or grpc+tls:// URL")
      ->capture_default_str();
  cmd->add_option("--sql", args->sql, "the query")->required();
  cmd->add_option("--token", args->token, "bearer token (default: $AMP_AUTH_TOKEN)");
  AddTimeoutOptions(cmd, &args->plan_timeout, &args->idle_timeout);
  cmd->add_flag("--stream", args->stream, "stream (sends amp-stream: true)");
  cmd->add_option("--resume", args->resume,
                  "resume cursor JSON {\"network\":{\"number\":N,\"hash\":\"0x…\"}}");
  cmd->add_option(
         "--format", args->format,
         "table, csv (RFC 4180, with a header; the summary goes to stderr) or count")
      ->check(CLI::IsMember({"table", "csv", "count"}))
      ->capture_default_str();
  cmd->add_option("--max-rows", args->max_rows, "rows shown in table format")
      ->check(IntegerAtLeast(0))
      ->capture_default_str();
  cmd->add_option("--max-microbatches", args->max_microbatches,
                  "stop a stream after N completed microbatches")
      ->check(UnsignedAtLeast(0));
  return [args] { return RunQuery(*args); };
}

}  // namespace ampdelta::cli
