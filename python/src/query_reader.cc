#include "query_reader.h"

#include <utility>

#include "ampdelta/amp/query_text.h"
#include "ampdelta/util/status.h"

namespace ampdelta::python {
namespace {

class QueryReader : public arrow::RecordBatchReader {
 public:
  QueryReader(std::unique_ptr<amp::Client> client,
              std::unique_ptr<amp::QueryStream> stream)
      : client_(std::move(client)), stream_(std::move(stream)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return stream_->schema(); }

  // Markers, keep-alives and metadata-only messages carry no rows: skip them.
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto next, stream_->Next());
      if (!next) {
        *batch = nullptr;
        return arrow::Status::OK();
      }
      if (next->data->num_rows() > 0) {
        *batch = std::move(next->data);
        return arrow::Status::OK();
      }
    }
  }

  arrow::Status Close() override {
    stream_->Cancel();
    return arrow::Status::OK();
  }

 private:
  std::unique_ptr<amp::Client> client_;
  std::unique_ptr<amp::QueryStream> stream_;
};

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> OpenQueryReader(
    const std::string& url, const amp::ClientOptions& options, const std::string& sql) {
  if (amp::HasStreamSetting(sql)) {
    return InvalidInputError(
        "to_arrow() and to_reader() run batch queries; this one has SETTINGS "
        "stream = true "
        "(load it with stream=True instead)");
  }
  ARROW_ASSIGN_OR_RAISE(auto client, amp::Client::Connect(url, options));
  amp::QueryOptions query;
  query.stream = false;
  ARROW_ASSIGN_OR_RAISE(auto stream, client->Query(sql, query));
  return std::make_shared<QueryReader>(std::move(client), std::move(stream));
}

}  // namespace ampdelta::python
