#include "ampdelta/delta/write/parquet_stitch.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/file_writer.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/statistics.h>

namespace ampdelta::delta {
namespace {

constexpr char kMagic[] = "PAR1";
constexpr int64_t kMagicSize = 4;

arrow::Status CannotStitch(size_t input, const std::string& why) {
  return arrow::Status::NotImplemented("cannot stitch Parquet file ", input, ": ", why);
}

// Where a column chunk's pages start: its dictionary page, or its first data page.
int64_t ChunkStart(const parquet::ColumnChunkMetaData& chunk) {
  return chunk.has_dictionary_page() && chunk.dictionary_page_offset() > 0
             ? chunk.dictionary_page_offset()
             : chunk.data_page_offset();
}

// The bytes of a row group: its column chunks, which lie one after another.
struct ByteRange {
  int64_t offset = 0;
  int64_t length = 0;
};

arrow::Result<ByteRange> RowGroupBytes(const parquet::RowGroupMetaData& row_group,
                                       size_t input) {
  ByteRange range;
  int64_t end = 0;
  for (int c = 0; c < row_group.num_columns(); ++c) {
    auto chunk = row_group.ColumnChunk(c);
    const int64_t start = ChunkStart(*chunk);
    if (c == 0) {
      range.offset = start;
    } else if (start != end) {
      return CannotStitch(input, "its column chunks do not follow one another");
    }
    if (start < kMagicSize || chunk->total_compressed_size() < 0) {
      return CannotStitch(input, "a column chunk's offsets are invalid");
    }
    end = start + chunk->total_compressed_size();
  }
  range.length = end - range.offset;
  return range;
}

// What the copy of a column chunk cannot carry.
arrow::Status CheckColumnChunk(const parquet::ColumnChunkMetaData& chunk, size_t input) {
  if (chunk.crypto_metadata() != nullptr) return CannotStitch(input, "it is encrypted");
  if (chunk.bloom_filter_offset()) return CannotStitch(input, "it has bloom filters");
  if (chunk.is_geo_stats_set())
    return CannotStitch(input, "it has geospatial statistics");
  if (chunk.key_value_metadata() != nullptr && chunk.key_value_metadata()->size() > 0)
    return CannotStitch(input, "its column chunks carry metadata");
  if (chunk.encoding_stats().empty())
    return CannotStitch(input, "its column chunks lack encoding statistics");
  if (!chunk.file_path().empty())
    return CannotStitch(input, "its column chunks lie in other files");
  return arrow::Status::OK();
}

bool SameMetadata(const std::shared_ptr<const arrow::KeyValueMetadata>& a,
                  const std::shared_ptr<const arrow::KeyValueMetadata>& b) {
  const bool a_empty = a == nullptr || a->size() == 0;
  const bool b_empty = b == nullptr || b->size() == 0;
  if (a_empty || b_empty) return a_empty == b_empty;
  return a->Equals(*b);
}

// The properties that make a footer builder describe `row_group` as it is: each column's
// codec (a writer may leave some columns uncompressed in some files), the format version
// and the writer's name.
std::shared_ptr<parquet::WriterProperties> PropertiesOf(
    const parquet::FileMetaData& footer, const parquet::RowGroupMetaData& row_group) {
  parquet::WriterProperties::Builder builder;
  builder.version(footer.version());
  builder.created_by(footer.created_by());
  for (int c = 0; c < row_group.num_columns(); ++c) {
    auto chunk = row_group.ColumnChunk(c);
    builder.compression(chunk->path_in_schema(), chunk->compression());
  }
  return builder.build();
}

// Describe a copied column chunk, its pages `shift` bytes later than they were.
void DescribeColumnChunk(const parquet::ColumnChunkMetaData& chunk, int64_t shift,
                         parquet::ColumnChunkMetaDataBuilder* out) {
  if (auto stats = chunk.encoded_statistics(); chunk.is_stats_set() && stats != nullptr) {
    // The deprecated min/max too, where a writer sets them (signed orders).
    parquet::EncodedStatistics copy = *stats;
    copy.set_is_signed(out->descr()->sort_order() == parquet::SortOrder::SIGNED);
    out->SetStatistics(copy);
  }
  if (auto sizes = chunk.size_statistics(); sizes != nullptr)
    out->SetSizeStatistics(*sizes);
  std::map<parquet::Encoding::type, int32_t> dictionary_pages;
  std::map<parquet::Encoding::type, int32_t> data_pages;
  for (const auto& stat : chunk.encoding_stats()) {
    auto& pages = stat.page_type == parquet::PageType::DICTIONARY_PAGE ? dictionary_pages
                                                                       : data_pages;
    pages[stat.encoding] += stat.count;
  }
  const bool has_dictionary =
      chunk.has_dictionary_page() && chunk.dictionary_page_offset() > 0;
  out->Finish(chunk.num_values(),
              has_dictionary ? chunk.dictionary_page_offset() + shift : 0,
              chunk.has_index_page() ? chunk.index_page_offset() + shift : -1,
              chunk.data_page_offset() + shift, chunk.total_compressed_size(),
              chunk.total_uncompressed_size(), has_dictionary,
              has_dictionary && data_pages.count(parquet::Encoding::PLAIN) != 0,
              dictionary_pages, data_pages);
}

// An offset index (each page's place in the file) with every page `shift` bytes later.
arrow::Result<std::shared_ptr<arrow::Buffer>> MovedOffsetIndex(
    const std::shared_ptr<arrow::Buffer>& bytes, int64_t shift) {
  auto index = parquet::OffsetIndex::Make(bytes->data(), bytes->size(),
                                          parquet::default_reader_properties());
  auto moved = parquet::OffsetIndexBuilder::Make();
  const auto& pages = index->page_locations();
  const auto& unencoded = index->unencoded_byte_array_data_bytes();
  for (size_t page = 0; page < pages.size(); ++page) {
    std::optional<int64_t> unencoded_bytes;
    if (page < unencoded.size()) unencoded_bytes = unencoded[page];
    moved->AddPage(pages[page].offset + shift, pages[page].compressed_page_size,
                   pages[page].first_row_index, unencoded_bytes);
  }
  moved->Finish(0);
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  moved->WriteTo(sink.get());
  return sink->Finish();
}

// A row group's place in the output.
struct PlacedRowGroup {
  size_t input = 0;
  int row_group = 0;
  int64_t shift = 0;  // output offset minus input offset
};

class Stitcher {
 public:
  Stitcher(const std::vector<StitchInput>& inputs, arrow::io::OutputStream* sink)
      : inputs_(inputs), sink_(sink) {}

  arrow::Result<StitchedFile> Run() {
    ARROW_RETURN_NOT_OK(CheckStitchable(inputs_));
    ARROW_RETURN_NOT_OK(Write(kMagic, kMagicSize));
    ARROW_RETURN_NOT_OK(CopyRowGroups());
    // Column indexes hold page statistics, no offsets: copied as they are.
    ARROW_RETURN_NOT_OK(WriteIndexes(
        parquet::IndexKind::kColumnIndex, &column_indexes_,
        [](std::shared_ptr<arrow::Buffer> bytes, int64_t) {
          return arrow::Result<std::shared_ptr<arrow::Buffer>>(std::move(bytes));
        }));
    ARROW_RETURN_NOT_OK(WriteIndexes(parquet::IndexKind::kOffsetIndex, &offset_indexes_,
                                     MovedOffsetIndex));
    ARROW_RETURN_NOT_OK(WriteFooter());
    ARROW_ASSIGN_OR_RAISE(result_.bytes, sink_->Tell());
    return result_;
  }

 private:
  arrow::Status Write(const void* data, int64_t length) {
    ARROW_RETURN_NOT_OK(sink_->Write(data, length));
    position_ += length;
    return arrow::Status::OK();
  }

  // Copy `range` of input `i` to the sink through one reused buffer (fresh buffers the
  // size of row groups would cost the kernel more in page faults than the copy itself).
  arrow::Status Copy(size_t i, const ByteRange& range) {
    constexpr int64_t kSlice = 4 * 1024 * 1024;
    if (copy_buffer_.empty()) copy_buffer_.resize(kSlice);
    for (int64_t done = 0; done < range.length;) {
      const int64_t want = std::min(kSlice, range.length - done);
      ARROW_ASSIGN_OR_RAISE(
          const int64_t got,
          inputs_[i].file->ReadAt(range.offset + done, want, copy_buffer_.data()));
      if (got != want) return CannotStitch(i, "it is shorter than its footer says");
      ARROW_RETURN_NOT_OK(Write(copy_buffer_.data(), got));
      done += got;
    }
    return arrow::Status::OK();
  }

  std::unique_ptr<parquet::ColumnChunkMetaData> Chunk(const PlacedRowGroup& placed,
                                                      int column) const {
    return inputs_[placed.input].footer->RowGroup(placed.row_group)->ColumnChunk(column);
  }

  arrow::Status CopyRowGroups() {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const auto& footer = *inputs_[i].footer;
      for (int r = 0; r < footer.num_row_groups(); ++r) {
        ARROW_ASSIGN_OR_RAISE(const ByteRange range,
                              RowGroupBytes(*footer.RowGroup(r), i));
        placed_.push_back({i, r, position_ - range.offset});
        ARROW_RETURN_NOT_OK(Copy(i, range));
        result_.rows += footer.RowGroup(r)->num_rows();
      }
    }
    result_.row_groups = static_cast<int64_t>(placed_.size());
    return arrow::Status::OK();
  }

  // Write one kind of page index for every placed column chunk, as `rewrite` makes it
  // from the input's bytes and the row group's shift, recording where each went.
  template <typename Rewrite>
  arrow::Status WriteIndexes(parquet::IndexKind kind,
                             std::vector<parquet::IndexLocations>* locations,
                             Rewrite rewrite) {
    locations->resize(placed_.size());
    for (size_t p = 0; p < placed_.size(); ++p) {
      const auto& input = inputs_[placed_[p].input];
      for (int c = 0; c < input.footer->num_columns(); ++c) {
        auto chunk = Chunk(placed_[p], c);
        auto location = kind == parquet::IndexKind::kColumnIndex
                            ? chunk->GetColumnIndexLocation()
                            : chunk->GetOffsetIndexLocation();
        if (!location) continue;
        ARROW_ASSIGN_OR_RAISE(auto bytes,
                              input.file->ReadAt(location->offset, location->length));
        ARROW_ASSIGN_OR_RAISE(auto written, rewrite(bytes, placed_[p].shift));
        (*locations)[p].push_back(
            {{0, c}, {position_, static_cast<int32_t>(written->size())}});
        ARROW_RETURN_NOT_OK(Write(written->data(), written->size()));
      }
    }
    return arrow::Status::OK();
  }

  // Each row group described by a builder of its own (its columns' codecs may differ from
  // its neighbours'), the descriptions appended into one footer.
  arrow::Status WriteFooter() {
    const auto& first = *inputs_.front().footer;
    std::shared_ptr<parquet::FileMetaData> footer;
    for (size_t p = 0; p < placed_.size(); ++p) {
      const auto& input = *inputs_[placed_[p].input].footer;
      auto row_group = input.RowGroup(placed_[p].row_group);
      auto builder = parquet::FileMetaDataBuilder::Make(first.schema(),
                                                        PropertiesOf(first, *row_group));
      auto* out = builder->AppendRowGroup();
      out->set_num_rows(row_group->num_rows());
      for (int c = 0; c < row_group->num_columns(); ++c) {
        DescribeColumnChunk(*row_group->ColumnChunk(c), placed_[p].shift,
                            out->NextColumnChunk());
      }
      out->Finish(row_group->total_byte_size(), static_cast<int16_t>(p));
      builder->SetIndexLocations(parquet::IndexKind::kColumnIndex, column_indexes_[p]);
      builder->SetIndexLocations(parquet::IndexKind::kOffsetIndex, offset_indexes_[p]);
      std::shared_ptr<parquet::FileMetaData> described =
          builder->Finish(first.key_value_metadata());
      ARROW_RETURN_NOT_OK(CheckDescribed(*row_group, *described->RowGroup(0)));
      if (footer == nullptr) {
        footer = std::move(described);
      } else {
        footer->AppendRowGroups(*described);
      }
    }
    if (footer == nullptr) {
      // Only files without rows: a footer without row groups.
      footer = parquet::FileMetaDataBuilder::Make(first.schema(),
                                                  parquet::WriterProperties::Builder()
                                                      .version(first.version())
                                                      ->created_by(first.created_by())
                                                      ->build())
                   ->Finish(first.key_value_metadata());
    }
    parquet::WriteFileMetaData(*footer, sink_);
    return arrow::Status::OK();
  }

  // What a reader decides from a column chunk's description (its encodings above all:
  // readers skip by dictionary only when every page is dictionary-encoded) must read as
  // the original's.
  static arrow::Status CheckDescribed(const parquet::RowGroupMetaData& original,
                                      const parquet::RowGroupMetaData& described) {
    for (int c = 0; c < original.num_columns(); ++c) {
      auto a = original.ColumnChunk(c);
      auto b = described.ColumnChunk(c);
      const std::set<parquet::Encoding::type> a_encodings(a->encodings().begin(),
                                                          a->encodings().end());
      const std::set<parquet::Encoding::type> b_encodings(b->encodings().begin(),
                                                          b->encodings().end());
      if (a_encodings != b_encodings || a->compression() != b->compression() ||
          a->num_values() != b->num_values() || a->is_stats_set() != b->is_stats_set() ||
          a->total_compressed_size() != b->total_compressed_size()) {
        return arrow::Status::NotImplemented(
            "cannot stitch Parquet files: column chunk '",
            a->path_in_schema()->ToDotString(), "' would not be described as it is");
      }
    }
    return arrow::Status::OK();
  }

  const std::vector<StitchInput>& inputs_;
  arrow::io::OutputStream* sink_;
  int64_t position_ = 0;
  std::vector<PlacedRowGroup> placed_;
  std::vector<parquet::IndexLocations> column_indexes_;
  std::vector<parquet::IndexLocations> offset_indexes_;
  std::vector<uint8_t> copy_buffer_;
  StitchedFile result_;
};

}  // namespace

arrow::Result<std::shared_ptr<parquet::FileMetaData>> ReadParquetFooter(
    const std::shared_ptr<arrow::io::RandomAccessFile>& file) {
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  return parquet::ReadMetaData(file);
  END_PARQUET_CATCH_EXCEPTIONS
}

arrow::Status CheckStitchable(const std::vector<StitchInput>& inputs) {
  if (inputs.empty()) return arrow::Status::Invalid("no Parquet files to stitch");
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  const parquet::FileMetaData& first = *inputs.front().footer;
  int64_t row_groups = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const parquet::FileMetaData& footer = *inputs[i].footer;
    // Leaves and the groups above them (names of structs too).
    if (!footer.schema()->Equals(*first.schema()) ||
        !footer.schema()->group_node()->Equals(first.schema()->group_node())) {
      return CannotStitch(i, "its columns differ from the first file's");
    }
    if (!SameMetadata(footer.key_value_metadata(), first.key_value_metadata()))
      return CannotStitch(i, "its schema metadata differs from the first file's");
    if (footer.version() != first.version() || footer.created_by() != first.created_by())
      return CannotStitch(i, "another writer or format version wrote it");
    if (footer.is_encryption_algorithm_set()) return CannotStitch(i, "it is encrypted");
    for (int r = 0; r < footer.num_row_groups(); ++r) {
      auto row_group = footer.RowGroup(r);
      for (int c = 0; c < row_group->num_columns(); ++c) {
        ARROW_RETURN_NOT_OK(CheckColumnChunk(*row_group->ColumnChunk(c), i));
      }
      ARROW_RETURN_NOT_OK(RowGroupBytes(*row_group, i).status());
    }
    row_groups += footer.num_row_groups();
  }
  if (row_groups > std::numeric_limits<int16_t>::max())
    return arrow::Status::NotImplemented("cannot stitch Parquet files: ", row_groups,
                                         " row groups are more than one file may number");
  return arrow::Status::OK();
  END_PARQUET_CATCH_EXCEPTIONS
}

arrow::Result<StitchedFile> StitchParquetFiles(const std::vector<StitchInput>& inputs,
                                               arrow::io::OutputStream* sink) {
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  return Stitcher(inputs, sink).Run();
  END_PARQUET_CATCH_EXCEPTIONS
}

}  // namespace ampdelta::delta
