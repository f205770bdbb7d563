// libFuzzer target: what an Amp server (or a table) hands the client as JSON: the
// per-batch app_metadata, the amp-resume cursor, and the block ranges a streaming load
// keeps in add.tags. Each that parses must encode and parse back to the same value.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ampdelta/amp/block_range.h"
#include "ampdelta/amp/query_text.h"
#include "ampdelta/amp/stream_interpreter.h"
#include "ampdelta/delta/log/actions.h"
#include "ampdelta/loader/state/stream_state.h"
#include "tests/fuzz/fuzz_support.h"

namespace amp = ampdelta::amp;
namespace loader = ampdelta::loader;

namespace {

// A stream as a server could send it: one app_metadata per line (the first may be a
// resume cursor), each with a row, through the interpreter that detects reorgs.
void Interpret(std::string_view text) {
  amp::StreamInterpreter interpreter(amp::StreamInterpreter::Options{16});
  bool first = true;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (first) {
      first = false;
      if (auto cursor = amp::ParseCursor(line); cursor.ok()) {
        interpreter.SeedCursor(*cursor);
        continue;
      }
    }
    auto metadata = amp::ParseBatchMetadata(line);
    if (!metadata.ok()) continue;
    if (!interpreter.Accept(*metadata, 1).ok()) return;
  }
  (void)interpreter.CompletedCursor();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = ampdelta::fuzz::AsText(data, size);

  if (auto metadata = amp::ParseBatchMetadata(text); metadata.ok()) {
    for (const auto& range : metadata->ranges) {
      (void)range.ToString();
      (void)range.size();
      (void)loader::BatchId(range);
    }
    auto again = amp::ParseBatchMetadata(amp::BatchMetadataToJson(*metadata));
    AMPDELTA_FUZZ_CHECK(again.ok(), "encoded app_metadata parses");
    AMPDELTA_FUZZ_CHECK(*again == *metadata, "app_metadata survives encode and parse");
    (void)amp::CursorFromRanges(metadata->ranges);
  }

  if (auto cursor = amp::ParseCursor(text); cursor.ok()) {
    auto again = amp::ParseCursor(amp::CursorToJson(*cursor));
    AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded cursor parses");
    AMPDELTA_FUZZ_CHECK(*again == *cursor, "a cursor survives encode and parse");
  }

  const std::string tag(text);
  if (auto ranges = loader::RangesFromTag(tag); ranges.ok()) {
    auto again = loader::RangesFromTag(loader::RangesToTag(*ranges));
    AMPDELTA_FUZZ_CHECK(again.ok(), "an encoded ranges tag parses");
    AMPDELTA_FUZZ_CHECK(*again == *ranges, "a ranges tag survives encode and parse");
    ampdelta::delta::Add file;
    file.tags = ampdelta::delta::NullableStringMap{{loader::RangesTagKey("app"), tag}};
    (void)loader::FileReachesBlock(file, "app", "mainnet", 0);
  }

  Interpret(text);

  // The client's reading of a query's SETTINGS (it decides whether to stream).
  (void)amp::HasStreamSetting(text);
  (void)amp::EnsureStreamingQuery(text);
  return 0;
}
