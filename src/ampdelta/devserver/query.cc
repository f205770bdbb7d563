#include "ampdelta/devserver/query.h"

#include <algorithm>
#include <optional>
#include <set>

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <arrow/type.h>

#include "ampdelta/devserver/query_error.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/numbers.h"

namespace ampdelta::devserver {
namespace {

namespace cp = arrow::compute;
namespace acero = arrow::acero;

const char* ComparisonFunction(sql::CompareOp op) {
  switch (op) {
    case sql::CompareOp::kEq:
      return "equal";
    case sql::CompareOp::kNe:
      return "not_equal";
    case sql::CompareOp::kLt:
      return "less";
    case sql::CompareOp::kLe:
      return "less_equal";
    case sql::CompareOp::kGt:
      return "greater";
    case sql::CompareOp::kGe:
      return "greater_equal";
  }
  return "equal";
}

std::string Describe(const sql::Literal& literal) {
  switch (literal.kind) {
    case sql::Literal::Kind::kString:
      return "'" + literal.text + "'";
    case sql::Literal::Kind::kHexBytes:
      return "x'" + ToHex(literal.text) + "'";
    case sql::Literal::Kind::kBoolean:
      return literal.boolean ? "true" : "false";
    default:
      return literal.text;
  }
}

// Type a literal as the column it is compared with.
arrow::Result<std::shared_ptr<arrow::Scalar>> TypeLiteral(const sql::Literal& literal,
                                                          const arrow::Field& field) {
  const auto& type = field.type();
  auto mismatch = [&](const std::string& why) {
    return InvalidQuery("cannot compare column '" + field.name() + "' (" +
                        type->ToString() + ") with " + Describe(literal) +
                        (why.empty() ? "" : ": " + why));
  };
  std::shared_ptr<arrow::Scalar> raw;
  switch (literal.kind) {
    case sql::Literal::Kind::kInteger: {
      if (!arrow::is_integer(type->id()) && !arrow::is_floating(type->id()) &&
          !arrow::is_decimal(type->id())) {
        return mismatch("");
      }
      if (!literal.text.empty() && literal.text[0] == '-') {
        const std::optional<int64_t> value = ParseInt64(literal.text);
        if (!value) return mismatch("out of range");
        raw = arrow::MakeScalar(*value);
      } else {
        const std::optional<uint64_t> value = ParseUint64(literal.text);
        if (!value) return mismatch("out of range");
        raw = arrow::MakeScalar(*value);
      }
      break;
    }
    case sql::Literal::Kind::kFloat: {
      if (!arrow::is_floating(type->id()) && !arrow::is_decimal(type->id())) {
        return mismatch("");
      }
      const std::optional<double> value = ParseDouble(literal.text);
      if (!value) return mismatch("out of range");
      raw = arrow::MakeScalar(*value);
      break;
    }
    case sql::Literal::Kind::kBoolean:
      if (type->id() != arrow::Type::BOOL) return mismatch("");
      return arrow::MakeScalar(literal.boolean);
    case sql::Literal::Kind::kHexBytes:
    case sql::Literal::Kind::kString: {
      if (type->id() == arrow::Type::STRING || type->id() == arrow::Type::LARGE_STRING) {
        if (literal.kind != sql::Literal::Kind::kString) return mismatch("");
        raw = arrow::MakeScalar(literal.text);
        break;
      }
      if (type->id() == arrow::Type::FIXED_SIZE_BINARY ||
          type->id() == arrow::Type::BINARY || type->id() == arrow::Type::LARGE_BINARY) {
        std::string bytes = literal.text;
        if (literal.kind == sql::Literal::Kind::kString) {
          auto decoded = FromHex(literal.text);
          if (!decoded.ok()) return mismatch("expected a 0x-prefixed hex string");
          bytes = *decoded;
        }
        if (type->id() == arrow::Type::FIXED_SIZE_BINARY) {
          const auto width = static_cast<size_t>(
              static_cast<const arrow::FixedSizeBinaryType&>(*type).byte_width());
          if (bytes.size() != width) {
            return mismatch("expected " + std::to_string(width) + " bytes, got " +
                            std::to_string(bytes.size()));
          }
          return std::make_shared<arrow::FixedSizeBinaryScalar>(
              arrow::Buffer::FromString(bytes), type);
        }
        return std::make_shared<arrow::BinaryScalar>(arrow::Buffer::FromString(bytes));
      }
      if (type->id() == arrow::Type::TIMESTAMP &&
          literal.kind == sql::Literal::Kind::kString) {
        const auto& ts = static_cast<const arrow::TimestampType&>(*type);
        auto parsed = arrow::Scalar::Parse(arrow::timestamp(ts.unit()), literal.text);
        if (!parsed.ok()) return mismatch("not an ISO-8601 timestamp");
        const auto& value = static_cast<const arrow::TimestampScalar&>(**parsed).value;
        return std::make_shared<arrow::TimestampScalar>(value, type);
      }
      if (type->id() == arrow::Type::DATE32 &&
          literal.kind == sql::Literal::Kind::kString) {
        auto parsed = arrow::Scalar::Parse(type, literal.text);
        if (!parsed.ok()) return mismatch("not a date");
        return *parsed;
      }
      return mismatch("");
    }
    case sql::Literal::Kind::kNull:
      return mismatch("");
  }
  cp::CastOptions options = cp::CastOptions::Safe(type);
  auto cast = cp::Cast(arrow::Datum(raw), options);
  if (!cast.ok()) return mismatch("value out of range for the column type");
  return cast->scalar();
}

arrow::Result<int> FindColumn(const arrow::Schema& schema, const std::string& name,
                              const std::string& source_name) {
  const int index = schema.GetFieldIndex(name);
  if (index >= 0) return index;
  std::string available;
  for (const auto& field : schema.fields()) {
    if (!available.empty()) available += ", ";
    available += field->name();
  }
  return InvalidQuery("column '" + name + "' not found in " + source_name +
                      " (available: " + available + ")");
}

}  // namespace

void Catalog::Add(std::shared_ptr<Dataset> dataset) {
  const std::string name = dataset->name();
  datasets_[name] = std::move(dataset);
}

arrow::Result<std::shared_ptr<Dataset>> Catalog::Find(const std::string& name) const {
  std::string key = name;
  const size_t at = key.find('@');
  if (at != std::string::npos) key.erase(at);
  auto it = datasets_.find(key);
  if (it != datasets_.end()) return it->second;
  std::shared_ptr<Dataset> match;
  for (const auto& [full, dataset] : datasets_) {
    const size_t slash = full.find('/');
    if (slash != std::string::npos && full.substr(slash + 1) == key) {
      if (match != nullptr)
        return InvalidQuery("dataset name '" + name + "' is ambiguous");
      match = dataset;
    }
  }
  if (match != nullptr) return match;
  std::string known;
  for (const auto& [full, dataset] : datasets_)
    known += (known.empty() ? "" : ", ") + full;
  return InvalidQuery("table reference resolution failed: dataset '" + name +
                      "' not found (known: " + known + ")");
}

arrow::Result<std::shared_ptr<arrow::Field>> BoundQuery::BindAggregate(
    const sql::SelectItem& item, const arrow::Schema& input,
    const std::string& source_name, BoundQuery* query) {
  Aggregate aggregate{item.function, -1};
  std::string name;
  std::shared_ptr<arrow::DataType> type = arrow::int64();
  const char* fn = item.function == sql::AggregateFn::kMin
                       ? "min"
                       : (item.function == sql::AggregateFn::kMax ? "max" : "count");
  if (!item.column.empty()) {
    ARROW_ASSIGN_OR_RAISE(aggregate.column, FindColumn(input, item.column, source_name));
    if (item.function != sql::AggregateFn::kCount)
      type = input.field(aggregate.column)->type();
    name = std::string(fn) + "(" + item.column + ")";
  } else {
    name = "count(*)";
  }
  query->aggregates_.push_back(aggregate);
  const bool nullable = item.function != sql::AggregateFn::kCount;
  return arrow::field(item.alias.empty() ? name : item.alias, type, nullable);
}

arrow::Status BoundQuery::BindGrouping(const sql::SelectStatement& statement,
                                       const std::shared_ptr<arrow::Schema>& input,
                                       const std::string& source_name,
                                       BoundQuery* query) {
  Grouping grouping;
  grouping.first_row_per_key = !statement.distinct_on.empty();
  grouping.distinct_all = statement.distinct;
  if (!statement.group_by.empty() && (statement.distinct || grouping.first_row_per_key)) {
    return InvalidQuery("unsupported SQL construct: DISTINCT with GROUP BY");
  }
  const auto& key_names =
      grouping.first_row_per_key ? statement.distinct_on : statement.group_by;
  for (const auto& name : key_names) {
    ARROW_ASSIGN_OR_RAISE(int column, FindColumn(*input, name, source_name));
    // A repeated key groups nothing more (DataFusion drops it too).
    if (std::find(grouping.keys.begin(), grouping.keys.end(), column) ==
        grouping.keys.end()) {
      grouping.keys.push_back(column);
    }
  }
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (const auto& item : statement.items) {
    switch (item.kind) {
      case sql::SelectItem::Kind::kStar:
        for (int i = 0; i < input->num_fields(); ++i) {
          grouping.outputs.push_back({i, -1});
          fields.push_back(input->field(i));
        }
        break;
      case sql::SelectItem::Kind::kColumn: {
        ARROW_ASSIGN_OR_RAISE(int column, FindColumn(*input, item.column, source_name));
        grouping.outputs.push_back({column, -1});
        auto field = input->field(column);
        fields.push_back(item.alias.empty() ? field : field->WithName(item.alias));
        break;
      }
      case sql::SelectItem::Kind::kExpression:
        return InvalidQuery(
            "unsupported SQL construct: a function call in a GROUP BY or DISTINCT query; "
            "call it in a subquery");
      case sql::SelectItem::Kind::kAggregate: {
        if (statement.group_by.empty()) {
          return InvalidQuery("unsupported SQL construct: aggregates with DISTINCT");
        }
        ARROW_ASSIGN_OR_RAISE(auto field,
                              BindAggregate(item, *input, source_name, query));
        grouping.outputs.push_back({-1, static_cast<int>(query->aggregates_.size()) - 1});
        fields.push_back(std::move(field));
        break;
      }
    }
  }
  if (statement.distinct) {
    for (const auto& output : grouping.outputs) {
      if (std::find(grouping.keys.begin(), grouping.keys.end(), output.column) ==
          grouping.keys.end()) {
        grouping.keys.push_back(output.column);
      }
    }
  } else if (!statement.group_by.empty()) {
    for (const auto& output : grouping.outputs) {
      if (output.column >= 0 && std::find(grouping.keys.begin(), grouping.keys.end(),
                                          output.column) == grouping.keys.end()) {
        return InvalidQuery(
            "column '" + input->field(output.column)->name() +
            "' must appear in GROUP BY or be used in an aggregate function");
      }
    }
  }
  grouping.first_key_is_block_num =
      input->field(grouping.keys.front())->name() == "_block_num";
  query->grouping_ = std::move(grouping);
  query->output_schema_ = arrow::schema(std::move(fields));
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Scalar>> BoundQuery::ComparisonValue(
    const sql::Comparison& comparison, const arrow::Field& column) {
  if (comparison.computed == nullptr) return TypeLiteral(comparison.value, column);
  ARROW_ASSIGN_OR_RAISE(auto bound,
                        BindExpression(*comparison.computed, arrow::Schema({}),
                                       "the right side of a comparison (only literals)"));
  ARROW_ASSIGN_OR_RAISE(auto value, EvaluateConstant(*bound));
  if (value->type->Equals(*column.type())) return value;
  auto cast = value->CastTo(column.type());
  if (!cast.ok()) {
    return InvalidQuery("cannot compare column '" + column.name() + "' (" +
                        column.type()->ToString() + ") with " +
                        comparison.computed->DisplayName() + " (" +
                        value->type->ToString() + ")");
  }
  return *cast;
}

void BoundQuery::Stage::PassEveryColumn(const std::shared_ptr<arrow::Schema>& input) {
  for (int i = 0; i < input->num_fields(); ++i) columns.push_back({i, nullptr});
  output = input;
}

arrow::Status BoundQuery::BindStage(const sql::SelectStatement& statement,
                                    const std::shared_ptr<arrow::Schema>& input,
                                    const std::string& source_name, BoundQuery* query) {
  Stage stage;
  for (const auto& comparison : statement.where) {
    ARROW_ASSIGN_OR_RAISE(int column, FindColumn(*input, comparison.column, source_name));
    ARROW_ASSIGN_OR_RAISE(auto value, ComparisonValue(comparison, *input->field(column)));
    stage.filters.push_back(
        {column, ComparisonFunction(comparison.op), std::move(value)});
  }
  if (!statement.group_by.empty() || statement.distinct ||
      !statement.distinct_on.empty()) {
    // Grouping happens after the last stage's filters; the stage passes every column.
    stage.PassEveryColumn(input);
    query->stages_.push_back(std::move(stage));
    return BindGrouping(statement, input, source_name, query);
  }
  std::vector<std::shared_ptr<arrow::Field>> fields;
  bool any_aggregate = false;
  bool any_plain = false;
  for (const auto& item : statement.items) {
    switch (item.kind) {
      case sql::SelectItem::Kind::kStar:
        any_plain = true;
        for (int i = 0; i < input->num_fields(); ++i) {
          stage.columns.push_back({i, nullptr});
          fields.push_back(input->field(i));
        }
        break;
      case sql::SelectItem::Kind::kColumn: {
        any_plain = true;
        ARROW_ASSIGN_OR_RAISE(int column, FindColumn(*input, item.column, source_name));
        stage.columns.push_back({column, nullptr});
        auto field = input->field(column);
        fields.push_back(item.alias.empty() ? field : field->WithName(item.alias));
        break;
      }
      case sql::SelectItem::Kind::kExpression: {
        any_plain = true;
        ARROW_ASSIGN_OR_RAISE(auto bound,
                              BindExpression(*item.expression, *input, source_name));
        auto field = bound->field();
        fields.push_back(item.alias.empty() ? field : field->WithName(item.alias));
        stage.columns.push_back({-1, std::move(bound)});
        break;
      }
      case sql::SelectItem::Kind::kAggregate:
        any_aggregate = true;
        break;
    }
  }
  if (any_aggregate && any_plain) {
    return InvalidQuery(
        "unsupported SQL construct: columns mixed with aggregates (GROUP BY)");
  }
  if (any_aggregate) {
    // Aggregation happens after the last stage's filters; the stage passes every column.
    stage.PassEveryColumn(input);
    for (const auto& item : statement.items) {
      ARROW_ASSIGN_OR_RAISE(auto field, BindAggregate(item, *input, source_name, query));
      fields.push_back(std::move(field));
    }
    query->output_schema_ = arrow::schema(std::move(fields));
  } else {
    stage.output = arrow::schema(fields);
    query->output_schema_ = stage.output;
  }
  query->stages_.push_back(std::move(stage));
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<const BoundQuery>> BoundQuery::Bind(
    const sql::SelectStatement& statement, const Catalog& catalog) {
  auto query = std::make_shared<BoundQuery>();
  query->streaming_setting_ = statement.streaming();
  query->limit_ = statement.limit;
  // Walk down to the innermost FROM, then bind stages from the inside out.
  std::vector<const sql::SelectStatement*> chain;
  for (const sql::SelectStatement* current = &statement;;) {
    chain.push_back(current);
    if (std::holds_alternative<sql::TableName>(current->from)) break;
    current = std::get<std::shared_ptr<sql::SelectStatement>>(current->from).get();
  }
  const auto& table_name = std::get<sql::TableName>(chain.back()->from);
  ARROW_ASSIGN_OR_RAISE(query->dataset_, catalog.Find(table_name.dataset));
  auto schema = query->dataset_->TableSchema(table_name.table);
  if (!schema.ok()) {
    return InvalidQuery("table reference resolution failed: " +
                        schema.status().message());
  }
  query->table_ = table_name.table;
  std::shared_ptr<arrow::Schema> input = *schema;
  std::string source_name = table_name.dataset + "." + table_name.table;
  for (size_t i = chain.size(); i-- > 0;) {
    const sql::SelectStatement* stage = chain[i];
    if (i > 0) {
      if (stage->limit)
        return InvalidQuery("unsupported SQL construct: LIMIT in a subquery");
      for (const auto& item : stage->items) {
        if (item.kind == sql::SelectItem::Kind::kAggregate) {
          return InvalidQuery("unsupported SQL construct: aggregate in a subquery");
        }
      }
      if (!stage->group_by.empty()) {
        return InvalidQuery("unsupported SQL construct: GROUP BY in a subquery");
      }
      if (stage->distinct || !stage->distinct_on.empty()) {
        return InvalidQuery("unsupported SQL construct: DISTINCT in a subquery");
      }
    }
    ARROW_RETURN_NOT_OK(BindStage(*stage, input, source_name, query.get()));
    input = query->stages_.back().output;
    source_name = "subquery";
  }
  // As in DataFusion, result columns need distinct names.
  const auto& fields = query->output_schema_->fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (fields[i]->name() == fields[j]->name()) {
        return InvalidQuery("the result has two columns named '" + fields[i]->name() +
                            "' (positions " + std::to_string(j) + " and " +
                            std::to_string(i) + "); give one an alias (AS)");
      }
    }
  }
  return query;
}

std::optional<std::string> BoundQuery::NonIncrementalOperation() const {
  if (grouping_) {
    if (grouping_->distinct_all || !grouping_->first_key_is_block_num) {
      return std::string(grouping_->first_row_per_key || grouping_->distinct_all
                             ? "Distinct"
                             : "Aggregate");
    }
  } else if (!aggregates_.empty()) {
    return std::string("Aggregate");
  }
  if (limit_) return std::string("Limit");
  return std::nullopt;
}

arrow::Result<std::optional<std::pair<uint64_t, uint64_t>>> BoundQuery::BlockBounds()
    const {
  ARROW_ASSIGN_OR_RAISE(auto source, dataset_->TableSchema(table_));
  std::set<int> block_columns;
  for (const char* name : {"block_num", "_block_num"}) {
    const int index = source->GetFieldIndex(name);
    if (index >= 0 && source->field(index)->type()->id() == arrow::Type::UINT64) {
      block_columns.insert(index);
    }
  }
  uint64_t low = 0;
  uint64_t high = UINT64_MAX;
  bool bounded = false;
  for (const Stage& stage : stages_) {
    for (const Predicate& predicate : stage.filters) {
      if (block_columns.count(predicate.column) == 0 ||
          predicate.value->type->id() != arrow::Type::UINT64 ||
          !predicate.value->is_valid) {
        continue;
      }
      const uint64_t value =
          static_cast<const arrow::UInt64Scalar&>(*predicate.value).value;
      const std::string& function = predicate.function;
      if (function == "equal") {
        low = std::max(low, value);
        high = std::min(high, value);
      } else if (function == "greater_equal") {
        low = std::max(low, value);
      } else if (function == "greater") {
        if (value == UINT64_MAX) {  // nothing is greater
          low = 1;
          high = 0;
        } else {
          low = std::max(low, value + 1);
        }
      } else if (function == "less_equal") {
        high = std::min(high, value);
      } else if (function == "less") {
        if (value == 0) {
          low = 1;
          high = 0;
        } else {
          high = std::min(high, value - 1);
        }
      } else {
        continue;
      }
      bounded = true;
    }
    std::set<int> passed;
    for (size_t out = 0; out < stage.columns.size(); ++out) {
      if (block_columns.count(stage.columns[out].input) != 0) {
        passed.insert(static_cast<int>(out));
      }
    }
    block_columns = std::move(passed);
  }
  if (!bounded) return std::nullopt;
  return std::make_pair(low, high);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> BoundQuery::Transform(
    const std::shared_ptr<arrow::RecordBatch>& source) const {
  std::shared_ptr<arrow::RecordBatch> batch = source;
  for (const Stage& stage : stages_) {
    if (!stage.filters.empty() && batch->num_rows() > 0) {
      arrow::Datum mask;
      for (const Predicate& predicate : stage.filters) {
        ARROW_ASSIGN_OR_RAISE(
            arrow::Datum part,
            cp::CallFunction(predicate.function, {batch->column(predicate.column),
                                                  arrow::Datum(predicate.value)}));
        if (mask.is_value()) {
          ARROW_ASSIGN_OR_RAISE(mask, cp::CallFunction("and_kleene", {mask, part}));
        } else {
          mask = std::move(part);
        }
      }
      ARROW_ASSIGN_OR_RAISE(arrow::Datum filtered, cp::Filter(batch, mask));
      batch = filtered.record_batch();
    }
    std::vector<std::shared_ptr<arrow::Array>> columns;
    columns.reserve(stage.columns.size());
    for (const StageColumn& column : stage.columns) {
      if (column.input >= 0) {
        columns.push_back(batch->column(column.input));
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(arrow::Datum value, column.computed->Evaluate(*batch));
      if (value.is_scalar()) {
        ARROW_ASSIGN_OR_RAISE(auto repeated, arrow::MakeArrayFromScalar(
                                                 *value.scalar(), batch->num_rows()));
        columns.push_back(std::move(repeated));
      } else {
        columns.push_back(value.make_array());
      }
    }
    batch = arrow::RecordBatch::Make(stage.output, batch->num_rows(), std::move(columns));
  }
  return batch;
}

arrow::Status BoundQuery::Aggregator::Consume(
    const std::shared_ptr<arrow::RecordBatch>& batch) {
  const auto& aggregates = query_->aggregates_;
  if (partials_.empty()) {
    partials_.resize(aggregates.size());
    non_null_.assign(aggregates.size(), 0);
  }
  rows_ += batch->num_rows();
  if (batch->num_rows() == 0) return arrow::Status::OK();
  for (size_t i = 0; i < aggregates.size(); ++i) {
    const Aggregate& aggregate = aggregates[i];
    if (aggregate.column < 0) continue;
    const auto& column = batch->column(aggregate.column);
    non_null_[i] += column->length() - column->null_count();
    if (aggregate.function == sql::AggregateFn::kCount) continue;
    ARROW_ASSIGN_OR_RAISE(arrow::Datum min_max, cp::CallFunction("min_max", {column}));
    const auto& pair = static_cast<const arrow::StructScalar&>(*min_max.scalar());
    partials_[i].push_back(
        pair.value[aggregate.function == sql::AggregateFn::kMin ? 0 : 1]);
  }
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> BoundQuery::Aggregator::Finish()
    const {
  const auto& aggregates = query_->aggregates_;
  const auto& schema = query_->output_schema_;
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (size_t i = 0; i < aggregates.size(); ++i) {
    const Aggregate& aggregate = aggregates[i];
    std::shared_ptr<arrow::Scalar> result;
    if (aggregate.function == sql::AggregateFn::kCount) {
      result = arrow::MakeScalar(
          int64_t{aggregate.column < 0 ? rows_ : (non_null_.empty() ? 0 : non_null_[i])});
    } else if (partials_.empty() || partials_[i].empty()) {
      result = arrow::MakeNullScalar(schema->field(static_cast<int>(i))->type());
    } else {
      // Reduce the per-batch partial results the same way.
      std::unique_ptr<arrow::ArrayBuilder> builder;
      ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(),
                                             partials_[i].front()->type, &builder));
      for (const auto& partial : partials_[i])
        ARROW_RETURN_NOT_OK(builder->AppendScalar(*partial));
      ARROW_ASSIGN_OR_RAISE(auto values, builder->Finish());
      ARROW_ASSIGN_OR_RAISE(arrow::Datum min_max, cp::CallFunction("min_max", {values}));
      const auto& pair = static_cast<const arrow::StructScalar&>(*min_max.scalar());
      result = pair.value[aggregate.function == sql::AggregateFn::kMin ? 0 : 1];
    }
    ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*result, 1));
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(schema, 1, std::move(columns));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> BoundQuery::Group(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) const {
  if (!grouping_) return arrow::Status::Invalid("the query does not group rows");
  ARROW_ASSIGN_OR_RAISE(auto table,
                        arrow::Table::FromRecordBatches(stages_.back().output, batches));
  ARROW_ASSIGN_OR_RAISE(auto rows, table->CombineChunksToBatch());
  if (rows->num_rows() == 0) return arrow::RecordBatch::MakeEmpty(output_schema_);
  return grouping_->first_row_per_key ? FirstRowPerKey(rows) : GroupByKeys(rows);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> BoundQuery::FirstRowPerKey(
    const std::shared_ptr<arrow::RecordBatch>& rows) const {
  std::vector<arrow::TypeHolder> types;
  std::vector<arrow::Datum> keys;
  for (int key : grouping_->keys) {
    types.emplace_back(rows->column(key)->type());
    keys.emplace_back(rows->column(key));
  }
  ARROW_ASSIGN_OR_RAISE(auto grouper, cp::Grouper::Make(types));
  ARROW_ASSIGN_OR_RAISE(cp::ExecBatch key_batch, cp::ExecBatch::Make(std::move(keys)));
  ARROW_ASSIGN_OR_RAISE(arrow::Datum ids, grouper->Consume(cp::ExecSpan(key_batch)));
  const auto group_ids_array = ids.array_as<arrow::UInt32Array>();
  const auto& group_ids = *group_ids_array;
  std::vector<bool> seen(grouper->num_groups(), false);
  arrow::Int64Builder first;
  for (int64_t row = 0; row < group_ids.length(); ++row) {
    const uint32_t group = group_ids.Value(row);
    if (seen[group]) continue;
    seen[group] = true;
    ARROW_RETURN_NOT_OK(first.Append(row));
  }
  ARROW_ASSIGN_OR_RAISE(auto indices, first.Finish());
  ARROW_ASSIGN_OR_RAISE(arrow::Datum taken, cp::Take(rows, indices));
  const auto& kept = taken.record_batch();
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (const auto& output : grouping_->outputs)
    columns.push_back(kept->column(output.column));
  return arrow::RecordBatch::Make(output_schema_, kept->num_rows(), std::move(columns));
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> BoundQuery::GroupByKeys(
    const std::shared_ptr<arrow::RecordBatch>& rows) const {
  // Columns and aggregates get unique names, so the plan's output is read by name
  // whatever the select list calls them.
  auto column_name = [](int index) { return "c" + std::to_string(index); };
  auto aggregate_name = [](int index) { return "a" + std::to_string(index); };
  arrow::FieldVector renamed;
  for (int i = 0; i < rows->num_columns(); ++i) {
    renamed.push_back(rows->schema()->field(i)->WithName(column_name(i)));
  }
  ARROW_ASSIGN_OR_RAISE(auto table,
                        arrow::Table::FromRecordBatches({arrow::RecordBatch::Make(
                            arrow::schema(renamed), rows->num_rows(), rows->columns())}));
  std::vector<cp::Aggregate> aggregates;
  for (size_t i = 0; i < aggregates_.size(); ++i) {
    const Aggregate& aggregate = aggregates_[i];
    const std::string name = aggregate_name(static_cast<int>(i));
    if (aggregate.column < 0) {
      aggregates.emplace_back("hash_count_all", name);
    } else if (aggregate.function == sql::AggregateFn::kCount) {
      aggregates.emplace_back(
          "hash_count", std::make_shared<cp::CountOptions>(cp::CountOptions::ONLY_VALID),
          arrow::FieldRef(aggregate.column), name);
    } else {
      aggregates.emplace_back(
          aggregate.function == sql::AggregateFn::kMin ? "hash_min" : "hash_max",
          arrow::FieldRef(aggregate.column), name);
    }
  }
  std::vector<arrow::FieldRef> keys;
  for (int key : grouping_->keys) keys.emplace_back(key);
  acero::Declaration plan = acero::Declaration::Sequence(
      {{"table_source", acero::TableSourceNodeOptions(table)},
       {"aggregate",
        acero::AggregateNodeOptions(std::move(aggregates), std::move(keys))}});
  // One thread: groups come out in the order their first rows came in (block order).
  ARROW_ASSIGN_OR_RAISE(auto result, acero::DeclarationToTable(std::move(plan),
                                                               /*use_threads=*/false));
  ARROW_ASSIGN_OR_RAISE(auto grouped, result->CombineChunksToBatch());
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (const auto& output : grouping_->outputs) {
    const std::string name = output.column >= 0 ? column_name(output.column)
                                                : aggregate_name(output.aggregate);
    auto column = grouped->GetColumnByName(name);
    if (column == nullptr)
      return arrow::Status::UnknownError("grouped result lacks ", name);
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(output_schema_, grouped->num_rows(),
                                  std::move(columns));
}

}  // namespace ampdelta::devserver
