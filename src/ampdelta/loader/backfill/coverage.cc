#include "ampdelta/loader/backfill/coverage.h"

#include <utility>
#include <vector>

#include <arrow/type.h>
#include <arrow/type_traits.h>

#include "ampdelta/amp/query_text.h"
#include "ampdelta/amp/server_error.h"
#include "ampdelta/loader/common/load_common.h"
#include "ampdelta/util/status.h"

namespace ampdelta::loader {
namespace {

// The refusal of a query whose result has no block column to filter partitions by.
arrow::Status NoBlockColumn(const std::string& column, const arrow::Schema& schema) {
  std::string names;
  for (const auto& f : schema.fields()) names += (names.empty() ? "" : ", ") + f->name();
  return InvalidInputError(
      "a parallel backfill filters the query's blocks on --block-column '" + column +
      "', which its result does not have (it returns " + names +
      "): select the block number as '" + column +
      "', or name the column that holds it with --block-column");
}

}  // namespace

arrow::Result<Coverage> ProbeCoverage(amp::Client& client, const std::string& batch_sql,
                                      const std::string& column,
                                      const DeltaLakeConfig& config,
                                      const LoadOptions& options) {
  ARROW_ASSIGN_OR_RAISE(const std::string sql,
                        amp::AddBlockFilter(batch_sql, column, 1, 0));
  amp::QueryOptions query;
  query.stream = false;
  query.idle_timeout = options.idle_timeout;
  query.stop = options.stop;
  query.stop_cancels_reads = true;
  for (int attempt = 0;; ++attempt) {
    auto probed = [&]() -> arrow::Result<std::pair<std::shared_ptr<arrow::Schema>,
                                                   std::vector<amp::BlockRange>>> {
      ARROW_ASSIGN_OR_RAISE(auto stream, client.Query(sql, query));
      const ScopedCancellation cancellable(options.cancellation, stream.get());
      std::vector<amp::BlockRange> ranges;
      while (ranges.empty()) {
        auto message = stream->Next();
        if (!message.ok()) {
          stream->Cancel();
          return message.status();
        }
        if (!message->has_value()) break;
        ranges = (*message)->metadata.ranges;
      }
      stream->Cancel();
      return std::make_pair(stream->schema(), std::move(ranges));
    }();
    if (!probed.ok()) {
      if (options.stop != nullptr && options.stop->load()) return probed.status();
      if (config.retry.enabled && attempt < config.retry.max_retries &&
          amp::IsTransientServerError(probed.status())) {
        if (internal::SleepUnlessStopped(options,
                                         internal::Backoff(config.retry, attempt))) {
          return probed.status();
        }
        continue;
      }
      // The filter names a column the result may lack: say so rather than the server's
      // "not found in subquery".
      amp::QueryOptions plan;
      plan.stop = options.stop;
      auto unfiltered = client.GetSchema(batch_sql, plan);
      if (unfiltered.ok() && (*unfiltered)->GetFieldByName(column) == nullptr) {
        return NoBlockColumn(column, **unfiltered);
      }
      return probed.status();
    }
    const auto& [schema, ranges] = *probed;
    const auto field = schema->GetFieldByName(column);
    if (field == nullptr) return NoBlockColumn(column, *schema);
    if (!arrow::is_integer(field->type()->id())) {
      return InvalidInputError("the block column '" + column + "' is " +
                               field->type()->ToString() + ", not an integer");
    }
    if (ranges.empty()) {
      return InvalidInputError(
          "the server reports no synced blocks for this query: nothing to backfill");
    }
    for (const auto& range : ranges) {
      if (range.network != ranges.front().network) {
        return InvalidInputError(
            "a parallel load splits one network's blocks; this query covers " +
            ranges.front().network + " and " + range.network);
      }
    }
    Coverage coverage;
    coverage.network = ranges.front().network;
    coverage.first = ranges.front().start;
    coverage.head = ranges.front().end;
    coverage.schema = schema;
    return coverage;
  }
}

}  // namespace ampdelta::loader
