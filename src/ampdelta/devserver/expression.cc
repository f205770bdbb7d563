#include "ampdelta/devserver/expression.h"

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/devserver/functions.h"
#include "ampdelta/devserver/query_error.h"

namespace ampdelta::devserver {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::DataType> LiteralType(const sql::Literal& literal) {
  switch (literal.kind) {
    case sql::Literal::Kind::kInteger:
      return arrow::int64();
    case sql::Literal::Kind::kFloat:
      return arrow::float64();
    case sql::Literal::Kind::kString:
      return arrow::utf8();
    case sql::Literal::Kind::kBoolean:
      return arrow::boolean();
    case sql::Literal::Kind::kHexBytes:
      return arrow::binary();
    case sql::Literal::Kind::kNull:
      return arrow::null();
  }
  return arrow::null();
}

class ColumnExpression : public BoundExpression {
 public:
  ColumnExpression(int index, std::shared_ptr<arrow::Field> field) : index_(index) {
    field_ = std::move(field);
  }
  arrow::Result<arrow::Datum> Evaluate(const arrow::RecordBatch& batch) const override {
    return batch.column(index_);
  }

 private:
  int index_;
};

class LiteralExpression : public BoundExpression {
 public:
  LiteralExpression(sql::Literal literal, std::shared_ptr<arrow::Scalar> value,
                    const std::string& name)
      : literal_(std::move(literal)), value_(std::move(value)) {
    field_ = arrow::field(name, value_->type);
  }
  arrow::Result<arrow::Datum> Evaluate(const arrow::RecordBatch&) const override {
    return value_;
  }
  const sql::Literal* literal() const override { return &literal_; }

 private:
  sql::Literal literal_;
  std::shared_ptr<arrow::Scalar> value_;
};

arrow::Result<std::shared_ptr<arrow::Scalar>> LiteralValue(const sql::Literal& literal) {
  switch (literal.kind) {
    case sql::Literal::Kind::kString:
      return arrow::MakeScalar(literal.text);
    case sql::Literal::Kind::kBoolean:
      return arrow::MakeScalar(literal.boolean);
    case sql::Literal::Kind::kHexBytes:
      return std::make_shared<arrow::BinaryScalar>(
          arrow::Buffer::FromString(literal.text));
    case sql::Literal::Kind::kNull:
      return arrow::MakeNullScalar(arrow::null());
    default: {
      auto value = arrow::Scalar::Parse(LiteralType(literal), literal.text);
      if (!value.ok())
        return InvalidQuery("the number " + literal.text + " is out of range");
      return value;
    }
  }
}

class CallExpression : public BoundExpression {
 public:
  CallExpression(std::unique_ptr<BoundFunction> function,
                 std::vector<std::shared_ptr<const BoundExpression>> args,
                 const std::string& name)
      : function_(std::move(function)), args_(std::move(args)) {
    field_ = arrow::field(name, function_->type());
  }
  arrow::Result<arrow::Datum> Evaluate(const arrow::RecordBatch& batch) const override {
    std::vector<arrow::Datum> values;
    values.reserve(args_.size());
    for (const auto& arg : args_) {
      ARROW_ASSIGN_OR_RAISE(auto value, arg->Evaluate(batch));
      values.push_back(std::move(value));
    }
    return function_->Call(values, batch.num_rows());
  }

 private:
  std::unique_ptr<BoundFunction> function_;
  std::vector<std::shared_ptr<const BoundExpression>> args_;
};

class FieldExpression : public BoundExpression {
 public:
  FieldExpression(std::shared_ptr<const BoundExpression> parent, int index,
                  const std::string& name)
      : parent_(std::move(parent)), index_(index) {
    field_ = parent_->field()->type()->field(index)->WithName(name);
  }
  arrow::Result<arrow::Datum> Evaluate(const arrow::RecordBatch& batch) const override {
    ARROW_ASSIGN_OR_RAISE(auto parent, parent_->Evaluate(batch));
    // struct_field keeps a null struct's fields null.
    return cp::CallFunction(
        "struct_field", {parent},
        std::make_shared<cp::StructFieldOptions>(std::vector<int>{index_}).get());
  }

 private:
  std::shared_ptr<const BoundExpression> parent_;
  int index_;
};

arrow::Result<int> FindField(const arrow::Schema& input, const std::string& name,
                             const std::string& source_name) {
  const int index = input.GetFieldIndex(name);
  if (index < 0) {
    return InvalidQuery("column '" + name + "' not found in " + source_name);
  }
  return index;
}

}  // namespace

arrow::Result<std::shared_ptr<const BoundExpression>> BindExpression(
    const sql::Expression& expression, const arrow::Schema& input,
    const std::string& source_name) {
  const std::string name = expression.DisplayName();
  switch (expression.kind) {
    case sql::Expression::Kind::kColumn: {
      ARROW_ASSIGN_OR_RAISE(int index, FindField(input, expression.name, source_name));
      return std::make_shared<ColumnExpression>(index, input.field(index));
    }
    case sql::Expression::Kind::kLiteral: {
      ARROW_ASSIGN_OR_RAISE(auto value, LiteralValue(expression.literal));
      return std::make_shared<LiteralExpression>(expression.literal, std::move(value),
                                                 name);
    }
    case sql::Expression::Kind::kCall: {
      std::vector<std::shared_ptr<const BoundExpression>> args;
      std::vector<ArgumentInfo> infos;
      for (const auto& arg : expression.args) {
        ARROW_ASSIGN_OR_RAISE(auto bound, BindExpression(arg, input, source_name));
        args.push_back(std::move(bound));
      }
      for (const auto& arg : args)
        infos.push_back({arg->field()->type(), arg->literal()});
      ARROW_ASSIGN_OR_RAISE(auto function, BindFunction(expression.name, infos));
      return std::make_shared<CallExpression>(std::move(function), std::move(args), name);
    }
    case sql::Expression::Kind::kField: {
      ARROW_ASSIGN_OR_RAISE(auto parent,
                            BindExpression(expression.args[0], input, source_name));
      const auto& type = *parent->field()->type();
      if (type.id() != arrow::Type::STRUCT) {
        return InvalidQuery("cannot take field '" + expression.name + "' of " +
                            parent->field()->name() + ", which is " + type.ToString() +
                            ", not a struct");
      }
      const int index =
          static_cast<const arrow::StructType&>(type).GetFieldIndex(expression.name);
      if (index < 0) {
        return InvalidQuery("field '" + expression.name +
                            "' not found (or not unique) in " + type.ToString());
      }
      return std::make_shared<FieldExpression>(std::move(parent), index, name);
    }
  }
  return InvalidQuery("unknown expression");
}

arrow::Result<std::shared_ptr<arrow::Scalar>> EvaluateConstant(
    const BoundExpression& expression) {
  auto empty = arrow::RecordBatch::Make(arrow::schema({}), 1,
                                        std::vector<std::shared_ptr<arrow::Array>>{});
  ARROW_ASSIGN_OR_RAISE(auto value, expression.Evaluate(*empty));
  if (value.is_scalar()) return value.scalar();
  if (value.is_array() && value.length() == 1) return value.make_array()->GetScalar(0);
  return InvalidQuery(
      "the right side of a comparison must be a literal or a function of "
      "literals");
}

}  // namespace ampdelta::devserver
