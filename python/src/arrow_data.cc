#include "arrow_data.h"

#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/c/helpers.h>
#include <arrow/type.h>

#include "ampdelta/util/status.h"

namespace nb = nanobind;

namespace ampdelta::python {
namespace {

constexpr const char* kStreamName = "arrow_array_stream";
constexpr const char* kSchemaName = "arrow_schema";
constexpr const char* kArrayName = "arrow_array";

// The C struct behind a capsule of `name`, or an error naming what was given instead.
template <typename CStruct>
arrow::Result<CStruct*> CapsulePointer(nb::handle capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule.ptr(), name)) {
    return InvalidInputError("expected an '", name,
                             "' PyCapsule (the Arrow PyCapsule interface), got ",
                             nb::type_name(capsule.type()).c_str());
  }
  return static_cast<CStruct*>(PyCapsule_GetPointer(capsule.ptr(), name));
}

void ReleaseStream(PyObject* capsule) noexcept {
  auto* stream =
      static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, kStreamName));
  if (stream == nullptr) return;
  if (stream->release != nullptr) stream->release(stream);
  delete stream;
}

void ReleaseSchema(PyObject* capsule) noexcept {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, kSchemaName));
  if (schema == nullptr) return;
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

nb::capsule Capsule(void* pointer, const char* name, void (*release)(PyObject*)) {
  return nb::steal<nb::capsule>(PyCapsule_New(pointer, name, release));
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ImportStreamCapsule(
    nb::handle capsule) {
  ARROW_ASSIGN_OR_RAISE(auto* source,
                        CapsulePointer<ArrowArrayStream>(capsule, kStreamName));
  if (ArrowArrayStreamIsReleased(source)) {
    return InvalidInputError("the Arrow stream was already consumed");
  }
  ArrowArrayStream moved;
  ArrowArrayStreamMove(source, &moved);
  auto reader = arrow::ImportRecordBatchReader(&moved);
  if (!reader.ok()) {
    // A stream of a column (a Polars Series) rather than of record batches, most often.
    return InvalidInputError(
        "the Arrow data is not a table (a stream of record batches): ",
        reader.status().message());
  }
  return reader;
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ImportArrayCapsules(
    nb::handle schema_capsule, nb::handle array_capsule) {
  ARROW_ASSIGN_OR_RAISE(auto* schema,
                        CapsulePointer<ArrowSchema>(schema_capsule, kSchemaName));
  ARROW_ASSIGN_OR_RAISE(auto* array,
                        CapsulePointer<ArrowArray>(array_capsule, kArrayName));
  if (ArrowArrayIsReleased(array) || ArrowSchemaIsReleased(schema)) {
    return InvalidInputError("the Arrow array was already consumed");
  }
  // The array is moved out (its capsule released); the schema is only read.
  ArrowArray moved;
  ArrowArrayMove(array, &moved);
  auto imported = arrow::ImportType(schema);
  if (!imported.ok()) {
    ArrowArrayRelease(&moved);
    return imported.status();
  }
  const std::shared_ptr<arrow::DataType>& type = *imported;
  if (type->id() != arrow::Type::STRUCT) {
    ArrowArrayRelease(&moved);
    return InvalidInputError(
        "an Arrow array to load must be a record batch (a struct), got ",
        type->ToString());
  }
  ARROW_ASSIGN_OR_RAISE(auto batch,
                        arrow::ImportRecordBatch(&moved, arrow::schema(type->fields())));
  return arrow::RecordBatchReader::Make({batch}, batch->schema());
}

arrow::Result<nb::capsule> ExportStreamCapsule(
    const std::shared_ptr<arrow::RecordBatchReader>& reader) {
  auto stream = std::make_unique<ArrowArrayStream>();
  ARROW_RETURN_NOT_OK(arrow::ExportRecordBatchReader(reader, stream.get()));
  return Capsule(stream.release(), kStreamName, &ReleaseStream);
}

arrow::Result<nb::capsule> ExportSchemaCapsule(const arrow::Schema& schema) {
  auto exported = std::make_unique<ArrowSchema>();
  ARROW_RETURN_NOT_OK(arrow::ExportSchema(schema, exported.get()));
  return Capsule(exported.release(), kSchemaName, &ReleaseSchema);
}

arrow::Result<HeldTable> HeldTable::Collect(
    const std::shared_ptr<arrow::RecordBatchReader>& reader) {
  ARROW_ASSIGN_OR_RAISE(auto table, reader->ToTable());
  return HeldTable(std::move(table));
}

arrow::Result<nb::capsule> HeldTable::ExportStream() const {
  return ExportStreamCapsule(std::make_shared<arrow::TableBatchReader>(table_));
}

arrow::Result<std::optional<HeldTable>> HeldReader::Next() {
  if (reader_ == nullptr) return std::nullopt;
  ARROW_ASSIGN_OR_RAISE(auto batch, reader_->Next());
  if (batch == nullptr) {
    reader_.reset();  // the producer's resources go at the end, not with the object
    return std::nullopt;
  }
  ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches({batch}));
  return HeldTable(std::move(table));
}

}  // namespace ampdelta::python
