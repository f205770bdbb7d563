// libFuzzer target: partition values, partition folders, log file names and add.path
// percent-coding. The first byte picks the partition column type, the rest is the text.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/array.h>
#include <arrow/compare.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "ampdelta/delta/log/log_path.h"
#include "ampdelta/delta/log/partitioning.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/util/utf8.h"
#include "tests/fuzz/fuzz_support.h"

namespace delta = ampdelta::delta;

namespace {

const std::vector<std::shared_ptr<arrow::DataType>>& Types() {
  static const std::vector<std::shared_ptr<arrow::DataType>> types = {
      arrow::int8(),
      arrow::int16(),
      arrow::int32(),
      arrow::int64(),
      arrow::float32(),
      arrow::float64(),
      arrow::boolean(),
      arrow::utf8(),
      arrow::date32(),
      arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
      arrow::timestamp(arrow::TimeUnit::MICRO),
      arrow::decimal128(10, 2),
      arrow::decimal128(38, 18),
      arrow::binary()};
  return types;
}

// A value read from partitionValues, written back as the writer would, reads the same.
void CheckPartitionValue(const std::string& text,
                         const std::shared_ptr<arrow::DataType>& type) {
  auto scalar = delta::ParsePartitionValue(text, type);
  if (!scalar.ok() || !(*scalar)->is_valid || !delta::IsPartitionableType(*type)) return;
  // An empty string is how partitionValues spell null.
  if (type->id() == arrow::Type::STRING && text.empty()) return;
  auto array = arrow::MakeArrayFromScalar(**scalar, 1);
  AMPDELTA_FUZZ_CHECK(array.ok(), "a parsed partition value makes an array");
  auto serialized = delta::SerializePartitionValue(**array, 0);
  if (!serialized.ok()) {
    AMPDELTA_FUZZ_CHECK(!ampdelta::IsValidUtf8(text),
                        "only bad UTF-8 fails to serialize");
    return;
  }
  AMPDELTA_FUZZ_CHECK(serialized->has_value(), "a valid partition value is not null");
  auto again = delta::ParsePartitionValue(*serialized, type);
  AMPDELTA_FUZZ_CHECK(again.ok(), "a serialized partition value parses");
  AMPDELTA_FUZZ_CHECK((*again)->Equals(**scalar, arrow::EqualOptions().nans_equal(true)),
                      "a partition value survives serialize and parse");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& type = Types()[data[0] % Types().size()];
  const std::string text(ampdelta::fuzz::AsText(data + 1, size - 1));

  CheckPartitionValue(text, type);
  (void)delta::ParsePartitionValue(std::nullopt, type);

  // Folder names: every special character is escaped, and decoding gives the value back.
  const std::string escaped = delta::EscapePartitionPathValue(text);
  AMPDELTA_FUZZ_CHECK(escaped.find('/') == std::string::npos,
                      "an escaped value has no '/'");
  AMPDELTA_FUZZ_CHECK(delta::DecodeLogPath(escaped) == text,
                      "escaping is undone by decoding");
  (void)delta::PartitionFolder({"p", text}, {{"p", text}, {text, std::nullopt}});

  // add.path coding.
  (void)delta::DecodeLogPath(text);
  AMPDELTA_FUZZ_CHECK(delta::DecodeLogPath(delta::EncodeLogPath(text)) == text,
                      "encoding a path is undone by decoding");

  // Log file names: what parses is named back the same way.
  if (auto parsed = delta::ParseLogPath(text)) {
    AMPDELTA_FUZZ_CHECK(parsed->path == text, "a parsed log path keeps its key");
    AMPDELTA_FUZZ_CHECK(parsed->version >= 0, "log versions are not negative");
    if (parsed->type == delta::LogFileType::kCommit) {
      AMPDELTA_FUZZ_CHECK(delta::CommitPath(parsed->version) == text,
                          "a commit path is named back the same");
    }
    if (parsed->type == delta::LogFileType::kCheckpoint) {
      AMPDELTA_FUZZ_CHECK(delta::CheckpointPath(parsed->version) == text,
                          "a checkpoint path is named back the same");
    }
    if (parsed->type == delta::LogFileType::kMultiPartCheckpoint) {
      AMPDELTA_FUZZ_CHECK(parsed->part >= 1 && parsed->part <= parsed->parts,
                          "a checkpoint part lies within its parts");
    }
  }
  (void)delta::ParseLogPath(std::string(delta::kLogDir) + "/" + text);
  return 0;
}
