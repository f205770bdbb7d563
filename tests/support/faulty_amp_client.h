#pragma once

// An amp::Client that fails like a flaky or dying server: its first queries fail at
// planning, and its first streams fail after a few messages, with a gRPC code of the
// test's choice.

#include <memory>
#include <optional>
#include <string>

#include "ampdelta/amp/client.h"
#include "ampdelta/util/status.h"

namespace ampdelta::testing {

struct AmpFaults {
  /// Queries failing at GetFlightInfo before one succeeds.
  int failing_queries = 0;
  /// Streams (of the queries that succeed) failing after `messages_before_failure`
  /// messages.
  int failing_streams = 0;
  int messages_before_failure = 2;
  /// The gRPC code of the failures.
  std::string code = "UNAVAILABLE";
};

class FaultyAmpClient : public amp::Client {
 public:
  FaultyAmpClient(amp::Client* inner, AmpFaults faults)
      : inner_(inner), faults_(std::move(faults)) {}

  arrow::Result<std::unique_ptr<amp::QueryStream>> Query(
      const std::string& sql, const amp::QueryOptions& options) override {
    ++queries;
    if (faults_.failing_queries > 0) {
      --faults_.failing_queries;
      return Failure("GetFlightInfo");
    }
    ARROW_ASSIGN_OR_RAISE(auto stream, inner_->Query(sql, options));
    std::optional<int> fail_after;
    if (faults_.failing_streams > 0) {
      --faults_.failing_streams;
      fail_after = faults_.messages_before_failure;
    }
    return std::unique_ptr<amp::QueryStream>(
        new Stream(std::move(stream), this, fail_after));
  }
  arrow::Result<std::shared_ptr<arrow::Schema>> GetSchema(
      const std::string& sql, const amp::QueryOptions& options) override {
    return inner_->GetSchema(sql, options);
  }
  const std::string& url() const override { return inner_->url(); }

  /// Queries attempted so far.
  int queries = 0;

 private:
  arrow::Status Failure(const char* call) const {
    return WithErrorCode(
        arrow::Status::IOError(call, " failed: ", faults_.code, ": injected"),
        ErrorCode::kServerError, faults_.code);
  }

  class Stream : public amp::QueryStream {
   public:
    Stream(std::unique_ptr<amp::QueryStream> inner, const FaultyAmpClient* owner,
           std::optional<int> fail_after)
        : inner_(std::move(inner)), owner_(owner), fail_after_(fail_after) {}
    const std::shared_ptr<arrow::Schema>& schema() const override {
      return inner_->schema();
    }
    arrow::Result<std::optional<amp::ResponseBatch>> Next() override {
      if (fail_after_ && seen_++ >= *fail_after_) return owner_->Failure("DoGet");
      return inner_->Next();
    }
    void Cancel() override { inner_->Cancel(); }

   private:
    std::unique_ptr<amp::QueryStream> inner_;
    const FaultyAmpClient* owner_;
    std::optional<int> fail_after_;
    int seen_ = 0;
  };

  amp::Client* inner_;
  AmpFaults faults_;
};

}  // namespace ampdelta::testing
