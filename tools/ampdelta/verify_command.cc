// `ampdelta verify TABLE`: check a loaded table against its own records and, with
// --server, against the chain (loader/table_verify.h).

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>
#include <nlohmann/json.hpp>

#include "ampdelta/amp/client.h"
#include "ampdelta/amp/query_text.h"
#include "ampdelta/loader/verify/table_verify.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/status.h"
#include "commands.h"
#include "table_actions.h"

namespace ampdelta::cli {
namespace {

struct VerifyArgs {
  TableArgs table;
  std::string block_column = "block_num";
  std::string hash_column;
  bool every_block = false;
  bool sparse = false;
  std::string server;
  std::string dataset;
  std::string token;
  bool json = false;
};

// The chain's block hashes from `SELECT block_num, hash FROM "<dataset>".blocks`.
loader::CanonicalHashes ServerHashes(std::shared_ptr<amp::Client> client,
                                     std::string dataset) {
  return [client = std::move(client), dataset = std::move(dataset)](
             uint64_t first,
             uint64_t last) -> arrow::Result<std::map<uint64_t, std::string>> {
    const std::string sql = "SELECT block_num, hash FROM " +
                            amp::QuoteIdentifier(dataset) +
                            ".blocks WHERE block_num >= " + std::to_string(first) +
                            " AND block_num <= " + std::to_string(last);
    ARROW_ASSIGN_OR_RAISE(auto stream, client->Query(sql));
    std::map<uint64_t, std::string> chain;
    while (true) {
      ARROW_ASSIGN_OR_RAISE(auto message, stream->Next());
      if (!message) break;
      const auto& batch = *message->data;
      if (batch.num_rows() == 0) continue;
      auto numbers = batch.GetColumnByName("block_num");
      auto hashes = batch.GetColumnByName("hash");
      if (numbers == nullptr || hashes == nullptr) {
        return arrow::Status::Invalid("the server's blocks of ", dataset,
                                      " have no block_num and hash columns");
      }
      ARROW_ASSIGN_OR_RAISE(auto as_uint, arrow::compute::Cast(numbers, arrow::uint64()));
      const auto block_array = as_uint.make_array();
      const auto& blocks = static_cast<const arrow::UInt64Array&>(*block_array);
      for (int64_t i = 0; i < batch.num_rows(); ++i) {
        if (blocks.IsNull(i) || hashes->IsNull(i)) continue;
        std::string text;
        if (hashes->type_id() == arrow::Type::FIXED_SIZE_BINARY) {
          const auto& fixed = static_cast<const arrow::FixedSizeBinaryArray&>(*hashes);
          text =
              ToHex0x(std::string_view(reinterpret_cast<const char*>(fixed.GetValue(i)),
                                       static_cast<size_t>(fixed.byte_width())));
        } else if (hashes->type_id() == arrow::Type::BINARY) {
          text = ToHex0x(static_cast<const arrow::BinaryArray&>(*hashes).GetView(i));
        } else if (hashes->type_id() == arrow::Type::STRING) {
          text = std::string(static_cast<const arrow::StringArray&>(*hashes).GetView(i));
        } else {
          return arrow::Status::Invalid("the server's block hash has type ",
                                        hashes->type()->ToString());
        }
        chain[blocks.Value(i)] = text;
      }
    }
    return chain;
  };
}

nlohmann::ordered_json RunsJson(const loader::BlockRuns& runs_by_app) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [app, networks] : runs_by_app) {
    for (const auto& [network, runs] : networks) {
      for (const auto& [first, last] : runs) out[app][network].push_back({first, last});
    }
  }
  return out;
}

// `<what> <app> <verb> <network>: first..last …`, a line per app and network.
void PrintRuns(const char* what, const char* verb, const loader::BlockRuns& runs_by_app) {
  for (const auto& [app, networks] : runs_by_app) {
    for (const auto& [network, runs] : networks) {
      std::cout << what << " " << app << " " << verb << " " << network << ":";
      for (const auto& [first, last] : runs) std::cout << " " << first << ".." << last;
      std::cout << "\n";
    }
  }
}

nlohmann::ordered_json ReportJson(const loader::VerifyReport& report) {
  nlohmann::ordered_json out = {{"version", report.version},
                                {"files", report.files},
                                {"rows", report.rows},
                                {"blocks", report.blocks}};
  if (report.first_block) out["first_block"] = *report.first_block;
  if (report.last_block) out["last_block"] = *report.last_block;
  out["hash_column"] = report.hash_column;
  out["one_row_per_block"] = report.one_row_per_block;
  out["checked_hashes"] = report.checked_hashes;
  out["recorded"] = RunsJson(report.recorded);
  out["backfilled"] = RunsJson(report.backfilled);
  out["counts"] = report.counts;
  out["findings"] = nlohmann::ordered_json::array();
  for (const auto& finding : report.findings) {
    nlohmann::ordered_json item = {{"kind", finding.kind}, {"message", finding.message}};
    if (!finding.file.empty()) item["file"] = finding.file;
    if (finding.first_block) item["first_block"] = *finding.first_block;
    if (finding.last_block) item["last_block"] = *finding.last_block;
    out["findings"].push_back(std::move(item));
  }
  out["ok"] = report.counts.empty();
  return out;
}

void PrintReport(const std::string& path, const loader::VerifyReport& report) {
  std::cout << "table " << path << " version " << report.version << ": " << report.files
            << " files, " << report.rows << " rows, " << report.blocks << " blocks";
  if (report.first_block) {
    std::cout << " (" << *report.first_block << ".." << *report.last_block << ")";
  }
  std::cout << "\n";
  PrintRuns("stream", "recorded", report.recorded);
  PrintRuns("backfill", "loaded", report.backfilled);
  std::cout << "checked: files, recorded ranges, backfill partitions, batch ids"
            << (report.hash_column.empty()
                    ? ""
                    : ", one hash per block (" + report.hash_column + ")")
            << (report.one_row_per_block ? ", one row per block" : "")
            << (report.checked_hashes ? ", hashes against the server's chain" : "")
            << "\n";
  for (const auto& finding : report.findings) {
    std::cout << finding.kind << ": " << finding.message << "\n";
  }
  int64_t total = 0;
  for (const auto& [kind, count] : report.counts) {
    total += count;
    const int64_t listed = std::count_if(
        report.findings.begin(), report.findings.end(),
        [&kind = kind](const loader::VerifyFinding& f) { return f.kind == kind; });
    if (count > listed) {
      std::cout << kind << ": " << count - listed << " more not listed\n";
    }
  }
  std::cout << (total == 0 ? std::string("OK: no findings")
                           : std::to_string(total) + " findings")
            << std::endl;
}

int RunVerify(const VerifyArgs& args) {
  if (!args.server.empty() && args.dataset.empty()) {
    PrintError(
        "--server needs --dataset (the dataset whose blocks hold the chain, e.g. "
        "edgeandnode/ethereum_mainnet)");
    return kExitUsage;
  }
  loader::VerifyOptions options;
  options.block_column = args.block_column;
  options.hash_column = args.hash_column;
  if (args.every_block) options.one_row_per_block = true;
  if (args.sparse) options.one_row_per_block = false;
  if (!args.server.empty()) {
    amp::ClientOptions client_options;
    if (!args.token.empty()) client_options.auth_token = args.token;
    auto client = amp::Client::Connect(args.server, client_options);
    if (!client.ok()) return Fail(client.status());
    options.canonical =
        ServerHashes(std::shared_ptr<amp::Client>(std::move(*client)), args.dataset);
  }
  auto store = OpenTableStore(args.table);
  if (!store.ok()) return Fail(store.status());
  auto report = loader::VerifyTable(*store, options);
  if (!report.ok()) return Fail(report.status());
  if (args.json) {
    std::cout << ReportJson(*report).dump() << std::endl;
  } else {
    PrintReport(args.table.path, *report);
  }
  return report->counts.empty() ? kExitOk : kExitFindings;
}

}  // namespace

CommandRunner AddVerifyCommand(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check a loaded table: its files, the block ranges its streams recorded, batch "
      "ids, "
      "one hash per block and, with --server, the chain's hashes (exit 7 on findings)");
  cmd->add_option("table", args->table.path, "the table's path or URL")->required();
  cmd->add_option("--storage-option", args->table.storage_options, kStorageOptionHelp);
  cmd->add_option("--block-column", args->block_column, "the block number column")
      ->capture_default_str();
  cmd->add_option("--hash-column", args->hash_column,
                  "the block hash column (default: block_hash, else hash)");
  auto* every = cmd->add_flag("--every-block", args->every_block,
                              "one row per block: every block between the first and "
                              "the last has exactly one (default when the hash column "
                              "is hash: a blocks table)");
  cmd->add_flag("--sparse", args->sparse, "blocks may have no row or many")
      ->excludes(every);
  cmd->add_option("--server", args->server,
                  "an Amp server whose chain the hashes are checked against");
  cmd->add_option("--dataset", args->dataset,
                  "with --server: the dataset whose `blocks` table is the chain");
  cmd->add_option("--token", args->token, "bearer token (default: $AMP_AUTH_TOKEN)");
  cmd->add_flag("--json", args->json, "print the report as one JSON object");
  return [args] { return RunVerify(*args); };
}

}  // namespace ampdelta::cli
