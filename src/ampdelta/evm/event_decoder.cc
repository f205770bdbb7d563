#include "ampdelta/evm/event_decoder.h"

#include <arrow/array.h>
#include <arrow/array/builder_base.h>
#include <arrow/array/builder_nested.h>
#include <arrow/type.h>

#include "ampdelta/evm/abi_decode.h"

namespace ampdelta::evm {
namespace {

arrow::Result<arrow::FieldVector> EventFields(const EventSignature& event) {
  arrow::FieldVector fields;
  for (const SolParam* param : event.Indexed()) {
    ARROW_ASSIGN_OR_RAISE(auto type, IndexedArrowTypeOf(param->type));
    fields.push_back(arrow::field(param->name, type));
  }
  for (const SolParam* param : event.Body()) {
    ARROW_ASSIGN_OR_RAISE(auto type, ArrowTypeOf(param->type));
    fields.push_back(arrow::field(param->name, type));
  }
  return fields;
}

arrow::Status CheckInputs(const arrow::Array* topics[3], const arrow::Array& data) {
  for (int i = 0; i < 3; ++i) {
    if (!topics[i]->type()->Equals(arrow::fixed_size_binary(32))) {
      return arrow::Status::TypeError("topic", i + 1,
                                      " must be FixedSizeBinary(32), not ",
                                      topics[i]->type()->ToString());
    }
    if (topics[i]->length() != data.length()) {
      return arrow::Status::Invalid("topic", i + 1, " and data differ in length");
    }
  }
  if (data.type_id() != arrow::Type::BINARY) {
    return arrow::Status::TypeError("data must be Binary, not ", data.type()->ToString());
  }
  return arrow::Status::OK();
}

// Appends one log's decoded parameters to the struct's field builders.
class RowDecoder {
 public:
  RowDecoder(const EventSignature& event, arrow::StructBuilder* builder)
      : indexed_(event.Indexed()), body_(event.Body()), builder_(builder) {
    for (const SolParam* param : body_) body_types_.push_back(&param->type);
  }

  arrow::Status Append(const arrow::Array* topics[3], const arrow::BinaryArray& data,
                       int64_t row) {
    ARROW_RETURN_NOT_OK(builder_->Append());
    int field = 0;
    for (size_t k = 0; k < indexed_.size(); ++k, ++field) {
      const auto& topic = static_cast<const arrow::FixedSizeBinaryArray&>(*topics[k]);
      auto* child = builder_->field_builder(field);
      if (topic.IsNull(row)) {
        ARROW_RETURN_NOT_OK(child->AppendNull());
      } else {
        ARROW_RETURN_NOT_OK(AppendTopic(indexed_[k]->type, topic.GetView(row), child));
      }
    }
    if (body_.empty()) return arrow::Status::OK();
    arrow::Result<std::vector<SolValue>> values =
        data.IsNull(row) ? arrow::Status::Invalid("no data")
                         : DecodeSequence(body_types_, data.GetView(row));
    for (size_t i = 0; i < body_.size(); ++i) {
      auto* child = builder_->field_builder(field + static_cast<int>(i));
      if (values.ok()) {
        ARROW_RETURN_NOT_OK(AppendValue(body_[i]->type, (*values)[i], child));
      } else {
        ARROW_RETURN_NOT_OK(child->AppendNull());
      }
    }
    return arrow::Status::OK();
  }

 private:
  std::vector<const SolParam*> indexed_;
  std::vector<const SolParam*> body_;
  std::vector<const SolType*> body_types_;
  arrow::StructBuilder* builder_;
};

}  // namespace

arrow::Result<std::shared_ptr<arrow::DataType>> DecodedEventType(
    const EventSignature& event) {
  if (event.params.empty()) return arrow::null();
  ARROW_ASSIGN_OR_RAISE(auto fields, EventFields(event));
  return arrow::struct_(fields);
}

arrow::Result<std::shared_ptr<arrow::Array>> DecodeLogs(
    const EventSignature& event, const arrow::Array& topic1, const arrow::Array& topic2,
    const arrow::Array& topic3, const arrow::Array& data, arrow::MemoryPool* pool) {
  const arrow::Array* topics[3] = {&topic1, &topic2, &topic3};
  ARROW_RETURN_NOT_OK(CheckInputs(topics, data));
  ARROW_ASSIGN_OR_RAISE(auto type, DecodedEventType(event));
  if (type->id() == arrow::Type::NA)
    return arrow::MakeArrayOfNull(type, data.length(), pool);
  std::unique_ptr<arrow::ArrayBuilder> builder;
  ARROW_RETURN_NOT_OK(arrow::MakeBuilder(pool, type, &builder));
  auto* struct_builder = static_cast<arrow::StructBuilder*>(builder.get());
  RowDecoder rows(event, struct_builder);
  const auto& binary = static_cast<const arrow::BinaryArray&>(data);
  for (int64_t row = 0; row < data.length(); ++row) {
    ARROW_RETURN_NOT_OK(rows.Append(topics, binary, row));
  }
  return builder->Finish();
}

}  // namespace ampdelta::evm
