#include "ampdelta/devserver/evm_schemas.h"

#include <arrow/type.h>

namespace ampdelta::devserver {
namespace {

std::shared_ptr<arrow::Field> NN(const std::string& name,
                                 std::shared_ptr<arrow::DataType> type) {
  return arrow::field(name, std::move(type), /*nullable=*/false);
}

std::shared_ptr<arrow::Field> N(const std::string& name,
                                std::shared_ptr<arrow::DataType> type) {
  return arrow::field(name, std::move(type), /*nullable=*/true);
}

// Amp's list columns name their item field "item" and declare it non-null.
std::shared_ptr<arrow::DataType> ListOf(std::shared_ptr<arrow::DataType> item) {
  return arrow::list(arrow::field("item", std::move(item), /*nullable=*/false));
}

}  // namespace

std::shared_ptr<arrow::DataType> AmpTimestampType() {
  return arrow::timestamp(arrow::TimeUnit::NANO, "+00:00");
}
std::shared_ptr<arrow::DataType> Bytes32Type() { return arrow::fixed_size_binary(32); }
std::shared_ptr<arrow::DataType> AddressType() { return arrow::fixed_size_binary(20); }
std::shared_ptr<arrow::DataType> CurrencyType() { return arrow::decimal128(38, 0); }

std::shared_ptr<arrow::Schema> BlocksSchema() {
  static const auto schema = arrow::schema({
      NN("_block_num", arrow::uint64()),
      NN("block_num", arrow::uint64()),
      NN("timestamp", AmpTimestampType()),
      NN("hash", Bytes32Type()),
      NN("parent_hash", Bytes32Type()),
      NN("ommers_hash", Bytes32Type()),
      NN("miner", AddressType()),
      NN("state_root", Bytes32Type()),
      NN("transactions_root", Bytes32Type()),
      NN("receipt_root", Bytes32Type()),
      NN("logs_bloom", arrow::binary()),
      NN("difficulty", CurrencyType()),
      N("total_difficulty", CurrencyType()),
      NN("gas_limit", arrow::uint64()),
      NN("gas_used", arrow::uint64()),
      NN("extra_data", arrow::binary()),
      NN("mix_hash", Bytes32Type()),
      NN("nonce", arrow::uint64()),
      N("base_fee_per_gas", CurrencyType()),
      N("withdrawals_root", Bytes32Type()),
      N("blob_gas_used", arrow::uint64()),
      N("excess_blob_gas", arrow::uint64()),
      N("parent_beacon_root", Bytes32Type()),
      N("requests_hash", Bytes32Type()),
  });
  return schema;
}

std::shared_ptr<arrow::Schema> TransactionsSchema() {
  static const auto access_entry = arrow::struct_({
      NN("address", AddressType()),
      NN("storage_keys", ListOf(Bytes32Type())),
  });
  static const auto authorization = arrow::struct_({
      NN("chain_id", arrow::uint64()),
      NN("address", AddressType()),
      NN("nonce", arrow::uint64()),
      NN("y_parity", arrow::boolean()),
      NN("r", Bytes32Type()),
      NN("s", Bytes32Type()),
  });
  static const auto schema = arrow::schema({
      NN("_block_num", arrow::uint64()),
      NN("block_hash", Bytes32Type()),
      NN("block_num", arrow::uint64()),
      NN("timestamp", AmpTimestampType()),
      NN("tx_index", arrow::uint32()),
      NN("tx_hash", Bytes32Type()),
      N("to", AddressType()),
      NN("nonce", arrow::uint64()),
      N("gas_price", CurrencyType()),
      NN("gas_limit", arrow::uint64()),
      NN("value", arrow::utf8()),
      NN("input", arrow::binary()),
      NN("r", Bytes32Type()),
      NN("s", Bytes32Type()),
      NN("v_parity", arrow::boolean()),
      N("chain_id", arrow::uint64()),
      NN("gas_used", arrow::uint64()),
      NN("type", arrow::int32()),
      N("max_fee_per_gas", CurrencyType()),
      N("max_priority_fee_per_gas", CurrencyType()),
      N("max_fee_per_blob_gas", CurrencyType()),
      NN("from", AddressType()),
      NN("status", arrow::boolean()),
      N("state_root", Bytes32Type()),
      N("access_list", ListOf(access_entry)),
      N("blob_versioned_hashes", ListOf(Bytes32Type())),
      N("authorization_list", ListOf(authorization)),
  });
  return schema;
}

std::shared_ptr<arrow::Schema> LogsSchema() {
  static const auto schema = arrow::schema({
      NN("_block_num", arrow::uint64()),
      NN("block_hash", Bytes32Type()),
      NN("block_num", arrow::uint64()),
      NN("timestamp", AmpTimestampType()),
      NN("tx_hash", Bytes32Type()),
      NN("tx_index", arrow::uint32()),
      NN("log_index", arrow::uint32()),
      NN("address", AddressType()),
      N("topic0", Bytes32Type()),
      N("topic1", Bytes32Type()),
      N("topic2", Bytes32Type()),
      N("topic3", Bytes32Type()),
      NN("data", arrow::binary()),
  });
  return schema;
}

}  // namespace ampdelta::devserver
