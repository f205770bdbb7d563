// libFuzzer target: the dev server's request decoding. The input is tried as SQL (parsed,
// bound to the synthetic chain and run on a few rows), as a GetFlightInfo command and as
// a DoGet ticket: a client may send any bytes in each.

#include <cstdint>
#include <memory>
#include <string>

#include <arrow/record_batch.h>

#include "ampdelta/devserver/query.h"
#include "ampdelta/devserver/sql.h"
#include "ampdelta/devserver/statement_command.h"
#include "ampdelta/devserver/synthetic_chain.h"
#include "ampdelta/devserver/ticket.h"
#include "tests/fuzz/fuzz_support.h"

namespace devserver = ampdelta::devserver;

namespace {

const devserver::Catalog& SmallChain() {
  static const devserver::Catalog catalog = [] {
    devserver::SyntheticChainOptions options;
    options.initial_blocks = 3;
    options.transactions_per_block = 2;
    options.logs_per_transaction = 1;
    options.max_rows_per_batch = 8;
    devserver::Catalog built;
    built.Add(std::make_shared<devserver::SyntheticChain>(options));
    return built;
  }();
  return catalog;
}

// Run a bound query over the first batch of its table, as DoGet would.
void RunOnFirstBatch(const devserver::BoundQuery& query) {
  auto range = query.dataset()->Synced();
  if (!range) return;
  auto scan = query.dataset()->Scan(query.table(), *range);
  if (!scan.ok()) return;
  auto batch = (*scan)->Next();
  if (!batch.ok() || *batch == nullptr) return;
  auto transformed = query.Transform(*batch);
  if (!transformed.ok()) return;
  if (query.is_grouped()) {
    auto grouped = query.Group({*transformed, *transformed});
    AMPDELTA_FUZZ_CHECK(
        !grouped.ok() || (*grouped)->schema()->Equals(*query.output_schema()),
        "a grouped result has the output schema");
    return;
  }
  if (!query.is_aggregate()) return;
  devserver::BoundQuery::Aggregator aggregator(&query);
  if (aggregator.Consume(*transformed).ok()) (void)aggregator.Finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = ampdelta::fuzz::AsText(data, size);

  if (auto statement = devserver::sql::Parse(std::string(bytes)); statement.ok()) {
    (void)statement->streaming();
    auto query = devserver::BoundQuery::Bind(*statement, SmallChain());
    if (query.ok()) {
      (void)(*query)->NonIncrementalOperation();
      RunOnFirstBatch(**query);
    }
  }

  (void)devserver::DecodeStatementQueryCommand(bytes);

  if (auto ticket = devserver::DecodeTicket(bytes); ticket.ok()) {
    auto encoded = devserver::EncodeTicket(*ticket);
    AMPDELTA_FUZZ_CHECK(encoded.ok(), "a decoded ticket encodes");
    auto again = devserver::DecodeTicket(*encoded);
    AMPDELTA_FUZZ_CHECK(again.ok() && *again == *ticket,
                        "a ticket survives encode and decode");
  }
  return 0;
}
