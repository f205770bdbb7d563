#include "ampdelta/delta/write/data_file_options.h"

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {

arrow::Result<Codec> ParseCodec(const std::string& name) {
  const std::string lower = AsciiLower(name);
  if (lower == "zstd") return Codec::kZstd;
  if (lower == "snappy") return Codec::kSnappy;
  if (lower == "gzip") return Codec::kGzip;
  if (lower == "lz4" || lower == "lz4_raw") return Codec::kLz4;
  if (lower == "brotli") return Codec::kBrotli;
  if (lower == "uncompressed" || lower == "none") return Codec::kUncompressed;
  return InvalidInputError("unknown compression codec '", name,
                           "' (use zstd, snappy, gzip, lz4, brotli or uncompressed)");
}

const char* CodecName(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
      return "uncompressed";
    case Codec::kSnappy:
      return "snappy";
    case Codec::kGzip:
      return "gzip";
    case Codec::kZstd:
      return "zstd";
    case Codec::kLz4:
      return "lz4";
    case Codec::kBrotli:
      return "brotli";
  }
  return "zstd";
}

std::string NewDataFileKey(const DataFileOptions& options,
                           const std::string& partition_folder, int64_t number) {
  const std::string token = options.file_token.empty() ? "" : options.file_token + "-";
  const std::string name = options.file_prefix + "-" +
                           std::to_string(100000 + number).substr(1) + "-" + NewUuid() +
                           "-" + token + "c000." + CodecName(options.codec) + ".parquet";
  std::string key = partition_folder.empty() ? name : partition_folder + "/" + name;
  if (!options.directory.empty()) key = options.directory + "/" + key;
  return key;
}

}  // namespace ampdelta::delta
