// A server that stops sending in the middle of DoGet: a batch load must fail with a clear
// error after its idle timeout and commit nothing, instead of hanging forever.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <arrow/builder.h>
#include <arrow/flight/api.h>
#include <arrow/flight/server.h>
#include <arrow/record_batch.h>
#include <arrow/table.h>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/batch/batch_loader.h"
#include "ampdelta/loader/common/config.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace ampdelta {
namespace {

namespace flight = arrow::flight;

std::shared_ptr<arrow::RecordBatch> Numbers(int64_t from, int64_t count) {
  arrow::UInt64Builder builder;
  for (int64_t i = 0; i < count; ++i)
    (void)builder.Append(static_cast<uint64_t>(from + i));
  return arrow::RecordBatch::Make(
      arrow::schema({arrow::field("block_num", arrow::uint64())}), count,
      {*builder.Finish()});
}

// Sends its schema (unless it stalls before it) and `batches` batches, then waits until
// released or until the client cancels the call, as a stuck server does.
class StallingStream : public flight::FlightDataStream {
 public:
  StallingStream(int batches, bool stall_before_schema,
                 const flight::ServerCallContext* call, std::mutex* mutex,
                 std::condition_variable* released, bool* done, int* stalled_calls,
                 int* cancelled_calls)
      : batches_(batches),
        stall_before_schema_(stall_before_schema),
        call_(call),
        mutex_(mutex),
        released_(released),
        done_(done),
        stalled_calls_(stalled_calls),
        cancelled_calls_(cancelled_calls) {
    auto table = *arrow::Table::FromRecordBatches({Numbers(0, 10)});
    reader_ = std::make_shared<arrow::TableBatchReader>(table);
    inner_ = std::make_unique<flight::RecordBatchStream>(reader_);
  }
  void SendGarbageBeforeStalling() { send_garbage_ = true; }
  std::shared_ptr<arrow::Schema> schema() override { return inner_->schema(); }
  arrow::Result<flight::FlightPayload> GetSchemaPayload() override {
    if (stall_before_schema_) Wait();
    return inner_->GetSchemaPayload();
  }
  arrow::Result<flight::FlightPayload> Next() override {
    if (sent_ < batches_) {
      ++sent_;
      return inner_->Next();
    }
    if (send_garbage_ && !garbage_sent_) {
      // An IPC header that is not a flatbuffer: the client cannot decode it.
      garbage_sent_ = true;
      flight::FlightPayload garbage;
      garbage.ipc_message.type = arrow::ipc::MessageType::RECORD_BATCH;
      garbage.ipc_message.metadata = arrow::Buffer::FromString(std::string(64, '\x7f'));
      return garbage;
    }
    Wait();
    return flight::FlightPayload{};  // end of stream
  }

 private:
  void Wait() {
    std::unique_lock<std::mutex> lock(*mutex_);
    ++*stalled_calls_;
    released_->notify_all();
    while (!*done_) {
      if (call_->is_cancelled()) {
        ++*cancelled_calls_;
        released_->notify_all();
        return;
      }
      released_->wait_for(lock, std::chrono::milliseconds(10));
    }
  }
  int batches_;
  bool stall_before_schema_;
  int sent_ = 0;
  bool garbage_sent_ = false;
  const flight::ServerCallContext* call_;
  std::mutex* mutex_;
  std::condition_variable* released_;
  bool* done_;
  int* stalled_calls_;
  int* cancelled_calls_;
  std::shared_ptr<arrow::RecordBatchReader> reader_;
  std::unique_ptr<flight::RecordBatchStream> inner_;
  bool send_garbage_ = false;
};

class StallingServer : public flight::FlightServerBase {
 public:
  StallingServer(int batches, bool stall_before_schema)
      : batches_(batches), stall_before_schema_(stall_before_schema) {}
  ~StallingServer() override { Release(); }

  void Release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    released_.notify_all();
  }

  arrow::Status GetFlightInfo(const flight::ServerCallContext&,
                              const flight::FlightDescriptor& descriptor,
                              std::unique_ptr<flight::FlightInfo>* info) override {
    flight::FlightEndpoint endpoint;
    endpoint.ticket.ticket = "stall";
    ARROW_ASSIGN_OR_RAISE(auto made,
                          flight::FlightInfo::Make(*Numbers(0, 1)->schema(), descriptor,
                                                   {endpoint}, -1, -1));
    *info = std::make_unique<flight::FlightInfo>(std::move(made));
    return arrow::Status::OK();
  }

  arrow::Status DoGet(const flight::ServerCallContext& call, const flight::Ticket&,
                      std::unique_ptr<flight::FlightDataStream>* stream) override {
    auto made = std::make_unique<StallingStream>(batches_, stall_before_schema_, &call,
                                                 &mutex_, &released_, &done_,
                                                 &stalled_calls_, &cancelled_calls_);
    if (send_garbage_) made->SendGarbageBeforeStalling();
    *stream = std::move(made);
    return arrow::Status::OK();
  }

  // Later calls send an undecodable message after their batches, then stall.
  void SendGarbageBeforeStalling() { send_garbage_ = true; }

  // Wait until `calls` DoGet calls stalled, or were cancelled by their client.
  bool WaitForStalledCalls(int calls, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return released_.wait_for(lock, timeout, [&] { return stalled_calls_ >= calls; });
  }
  bool WaitForCancelledCalls(int calls, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return released_.wait_for(lock, timeout, [&] { return cancelled_calls_ >= calls; });
  }

 private:
  int batches_;
  bool stall_before_schema_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool done_ = false;
  int stalled_calls_ = 0;
  int cancelled_calls_ = 0;
  std::atomic<bool> send_garbage_{false};
};

// Starts a StallingServer on an ephemeral port, and stops it.
class RunsAStallingServer {
 protected:
  void StartServer(bool stall_before_schema) {
    server_ = std::make_unique<StallingServer>(/*batches=*/1, stall_before_schema);
    auto location = *flight::Location::ForGrpcTcp("127.0.0.1", 0);
    ASSERT_OK(server_->Init(flight::FlightServerOptions(location)));
    url_ = "grpc://127.0.0.1:" + std::to_string(server_->port());
  }
  void StopServer() {
    server_->Release();
    ASSERT_OK(server_->Shutdown());
  }

  std::unique_ptr<StallingServer> server_;
  std::string url_;
};

class StalledServerTest : public ::testing::TestWithParam<bool>,
                          protected RunsAStallingServer {
 protected:
  void SetUp() override { StartServer(/*stall_before_schema=*/GetParam()); }
  void TearDown() override { StopServer(); }

  testing::TempDir dir_;
};

// The server sends its schema and one batch before it stalls.
class StalledServerAfterABatchTest : public ::testing::Test,
                                     protected RunsAStallingServer {
 protected:
  void SetUp() override { StartServer(/*stall_before_schema=*/false); }
  void TearDown() override { StopServer(); }
};

TEST_P(StalledServerTest, BatchLoadFailsAfterItsIdleTimeoutAndCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  const std::string table = dir_.path() + "/stalled";
  ASSERT_OK_AND_ASSIGN(
      auto config,
      loader::ParseDeltaLakeConfig(R"({"table_path": ")" + table +
                                   R"(", "resilience": {"retry": {"enabled": false}}})"));
  loader::LoadOptions options;
  options.idle_timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  const auto result =
      loader::LoadBatch(*client, "SELECT block_num FROM t", config, options);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(result.success);
  EXPECT_THAT(result.error, ::testing::HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_THAT(result.error, ::testing::HasSubstr("idle timeout"));
  EXPECT_EQ(ClassifyError(result.status), ErrorClass::kServer);
  EXPECT_LT(waited, std::chrono::seconds(20));
  EXPECT_FALSE(std::filesystem::exists(table + "/_delta_log"));
}

TEST_P(StalledServerTest, QueryStreamNextFailsAfterTheIdleTimeout) {
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  amp::QueryOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  auto stream = client->Query("SELECT 1", options);
  if (GetParam()) {
    EXPECT_THAT(stream, testing::StatusHasMessage("idle timeout"));
    return;
  }
  ASSERT_OK(stream.status());
  ASSERT_OK_AND_ASSIGN(auto first, (*stream)->Next());
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT((*stream)->Next(), testing::StatusHasMessage("idle timeout"));
}

// A stream that gave up or was dropped leaves no call behind: a call left waiting would
// hold a thread that could still be decoding when the process exits.
TEST_P(StalledServerTest, AStreamThatTimedOutHasCancelledItsCall) {
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  amp::QueryOptions options;
  // Long enough for the server to start the call even on a loaded machine: a call
  // cancelled before its handler ran is never seen cancelled.
  options.idle_timeout = std::chrono::milliseconds(1500);
  {
    auto stream = client->Query("SELECT 1", options);
    if (stream.ok()) {
      ASSERT_OK_AND_ASSIGN(auto first, (*stream)->Next());
      EXPECT_THAT((*stream)->Next(), testing::StatusHasMessage("idle timeout"));
    } else {
      EXPECT_THAT(stream, testing::StatusHasMessage("idle timeout"));
    }
  }
  EXPECT_TRUE(server_->WaitForCancelledCalls(1, std::chrono::seconds(10)));
}

TEST_P(StalledServerTest, DroppingAStreamCancelsItsCall) {
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  {
    // No idle timeout: the stream starts without waiting for the schema.
    ASSERT_OK_AND_ASSIGN(auto stream, client->Query("SELECT 1"));
    if (!GetParam()) {
      ASSERT_OK_AND_ASSIGN(auto first, stream->Next());
      ASSERT_TRUE(first.has_value());
    }
    // A call cancelled before the server started it would prove nothing.
    ASSERT_TRUE(server_->WaitForStalledCalls(1, std::chrono::seconds(10)));
  }
  EXPECT_TRUE(server_->WaitForCancelledCalls(1, std::chrono::seconds(10)));
}

TEST_P(StalledServerTest, CancelEndsANextWaitingForTheServer) {
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  ASSERT_OK_AND_ASSIGN(auto stream, client->Query("SELECT 1"));
  if (!GetParam()) {
    ASSERT_OK_AND_ASSIGN(auto first, stream->Next());
    ASSERT_TRUE(first.has_value());
  }
  std::thread canceller([&] {
    // Once the server's handler waits: a call cancelled before it ran proves nothing.
    EXPECT_TRUE(server_->WaitForStalledCalls(1, std::chrono::seconds(10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stream->Cancel();
  });
  auto next = stream->Next();
  canceller.join();
  EXPECT_THAT(next, testing::StatusHasMessage("cancelled"));
  EXPECT_TRUE(server_->WaitForCancelledCalls(1, std::chrono::seconds(10)));
}

// A message the client cannot decode fails the read at once, though the server keeps the
// call open: finishing the call must not wait for a stream that never ends.
TEST_F(StalledServerAfterABatchTest, AnUndecodableMessageFailsAtOnceAndCancelsTheCall) {
  server_->SendGarbageBeforeStalling();
  ASSERT_OK_AND_ASSIGN(auto client, amp::Client::Connect(url_));
  ASSERT_OK_AND_ASSIGN(auto stream, client->Query("SELECT 1"));  // no idle timeout
  ASSERT_OK_AND_ASSIGN(auto first, stream->Next());
  ASSERT_TRUE(first.has_value());
  auto next = std::async(std::launch::async, [&] { return stream->Next(); });
  if (next.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    stream->Cancel();
    next.wait();
    FAIL() << "Next() hung on an undecodable message";
  }
  auto failed = next.get();
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(),
              ::testing::Not(::testing::HasSubstr("cancelled")));
  EXPECT_TRUE(server_->WaitForCancelledCalls(1, std::chrono::seconds(10)));
}

INSTANTIATE_TEST_SUITE_P(StallPoints, StalledServerTest, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "BeforeTheSchema"
                                                   : "AfterTheFirstBatch";
                         });

}  // namespace
}  // namespace ampdelta
