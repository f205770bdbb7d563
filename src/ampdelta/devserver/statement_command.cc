#include "ampdelta/devserver/statement_command.h"

#include <cstdint>
#include <optional>

#include "ampdelta/util/utf8.h"

namespace ampdelta::devserver {
namespace {

// A minimal protobuf reader: enough to walk length-delimited and varint fields and skip
// the rest.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view data) : data_(data) {}

  bool done() const { return pos_ >= data_.size(); }

  arrow::Result<uint64_t> ReadVarint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Error("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) return value;
    }
    return Error("varint too long");
  }

  // Read one field; `bytes` is set for length-delimited fields.
  arrow::Status ReadField(uint32_t* number, std::optional<std::string_view>* bytes) {
    ARROW_ASSIGN_OR_RAISE(uint64_t key, ReadVarint());
    *number = static_cast<uint32_t>(key >> 3);
    bytes->reset();
    switch (key & 7) {
      case 0:  // varint
        return ReadVarint().status();
      case 1:  // fixed64
        return Skip(8);
      case 2: {  // length-delimited
        ARROW_ASSIGN_OR_RAISE(uint64_t length, ReadVarint());
        if (length > data_.size() - pos_)
          return Error("truncated length-delimited field");
        *bytes = data_.substr(pos_, length);
        pos_ += length;
        return arrow::Status::OK();
      }
      case 5:  // fixed32
        return Skip(4);
      default:
        return Error("unsupported wire type");
    }
  }

 private:
  arrow::Status Skip(size_t count) {
    if (count > data_.size() - pos_) return Error("truncated fixed-width field");
    pos_ += count;
    return arrow::Status::OK();
  }

  static arrow::Status Error(const char* what) {
    return arrow::Status::Invalid("ProtocolBuffers decoding error: ", what);
  }

  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

arrow::Result<std::string> DecodeStatementQueryCommand(std::string_view bytes) {
  std::string_view type_url;
  std::string_view value;
  ProtoReader any(bytes);
  while (!any.done()) {
    uint32_t number = 0;
    std::optional<std::string_view> field;
    ARROW_RETURN_NOT_OK(any.ReadField(&number, &field));
    if (number == 1 && field) type_url = *field;
    if (number == 2 && field) value = *field;
  }
  if (type_url != kCommandStatementQueryTypeUrl) {
    return arrow::Status::Invalid("unsupported flight descriptor command: ", type_url);
  }
  std::string query;
  ProtoReader statement(value);
  while (!statement.done()) {
    uint32_t number = 0;
    std::optional<std::string_view> field;
    ARROW_RETURN_NOT_OK(statement.ReadField(&number, &field));
    if (number == 1 && field) query = std::string(*field);
  }
  // A proto3 string must be UTF-8 (Amp's decoder refuses anything else), and the query
  // text travels on in the JSON ticket.
  if (!IsValidUtf8(query)) {
    return arrow::Status::Invalid(
        "ProtocolBuffers decoding error: the query is not valid UTF-8");
  }
  return query;
}

}  // namespace ampdelta::devserver
