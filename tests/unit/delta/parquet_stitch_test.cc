#include "ampdelta/delta/write/parquet_stitch.h"

#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/builder.h>
#include <arrow/io/memory.h>
#include <arrow/table.h>
#include <arrow/type.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_reader.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>
#include <parquet/statistics.h>

#include "tests/support/test_util.h"

namespace ampdelta::delta {
namespace {

// Rows [from, from + n): an int64 with nulls, a repetitive string (dictionary-encoded),
// a struct, a list and a double.
std::shared_ptr<arrow::Table> Rows(int64_t from, int64_t n) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  arrow::Int32Builder inner;
  arrow::ListBuilder lists(arrow::default_memory_pool(),
                           std::make_shared<arrow::Int32Builder>());
  arrow::DoubleBuilder values;
  for (int64_t i = from; i < from + n; ++i) {
    if (i % 7 == 0) {
      (void)ids.AppendNull();
    } else {
      (void)ids.Append(i);
    }
    (void)names.Append("name-" + std::to_string(i % 5));
    (void)inner.Append(static_cast<int32_t>(i * 3));
    (void)lists.Append();
    (void)static_cast<arrow::Int32Builder*>(lists.value_builder())
        ->Append(static_cast<int32_t>(i));
    (void)values.Append(static_cast<double>(i) / 4);
  }
  auto inner_array = *inner.Finish();
  auto structs =
      *arrow::StructArray::Make({inner_array}, {arrow::field("x", arrow::int32())});
  auto schema = arrow::schema({arrow::field("id", arrow::int64()),
                               arrow::field("name", arrow::utf8()),
                               arrow::field("nested", structs->type()),
                               arrow::field("items", arrow::list(arrow::int32())),
                               arrow::field("value", arrow::float64())});
  return arrow::Table::Make(schema, {*ids.Finish(), *names.Finish(), structs,
                                     *lists.Finish(), *values.Finish()});
}

std::shared_ptr<parquet::WriterProperties> Properties(
    parquet::Compression::type name_codec = parquet::Compression::SNAPPY) {
  return parquet::WriterProperties::Builder()
      .compression(parquet::Compression::SNAPPY)
      ->compression("name", name_codec)
      ->enable_statistics()
      ->enable_write_page_index()
      ->data_pagesize(4096)  // several pages per chunk, so offset indexes have work
      ->max_row_group_length(3000)
      ->created_by("ampdelta")
      ->build();
}

std::shared_ptr<arrow::Buffer> ParquetBytes(
    const arrow::Table& table,
    std::shared_ptr<parquet::WriterProperties> properties = Properties(),
    bool store_schema = true) {
  auto sink = *arrow::io::BufferOutputStream::Create();
  parquet::ArrowWriterProperties::Builder arrow_builder;
  if (store_schema) arrow_builder.store_schema();
  auto arrow_properties = arrow_builder.build();
  EXPECT_OK(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, 3000,
                                       properties, arrow_properties));
  return *sink->Finish();
}

StitchInput InputOf(const std::shared_ptr<arrow::Buffer>& bytes) {
  StitchInput input;
  input.file = std::make_shared<arrow::io::BufferReader>(bytes);
  input.footer = *ReadParquetFooter(input.file);
  return input;
}

std::shared_ptr<arrow::Table> ReadAll(const std::shared_ptr<arrow::Buffer>& bytes) {
  auto reader = *parquet::arrow::OpenFile(
      std::make_shared<arrow::io::BufferReader>(bytes), arrow::default_memory_pool());
  auto table = reader->ReadTable();
  EXPECT_OK(table.status());
  return table.ok() ? *table : nullptr;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Stitch(
    const std::vector<StitchInput>& inputs, StitchedFile* stitched = nullptr) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto result, StitchParquetFiles(inputs, sink.get()));
  if (stitched != nullptr) *stitched = result;
  return sink->Finish();
}

TEST(ParquetStitchTest, StitchedFileHoldsEveryRowGroupOfItsInputsInOrder) {
  std::vector<std::shared_ptr<arrow::Table>> parts = {Rows(0, 7000), Rows(7000, 2500),
                                                      Rows(9500, 6100)};
  std::vector<StitchInput> inputs;
  int64_t row_groups = 0;
  for (const auto& part : parts) {
    inputs.push_back(InputOf(ParquetBytes(*part)));
    row_groups += inputs.back().footer->num_row_groups();
  }
  StitchedFile stitched;
  ASSERT_OK_AND_ASSIGN(auto bytes, Stitch(inputs, &stitched));
  EXPECT_EQ(stitched.rows, 15600);
  EXPECT_EQ(stitched.row_groups, row_groups);
  EXPECT_EQ(stitched.bytes, bytes->size());
  ASSERT_OK_AND_ASSIGN(auto expected, arrow::ConcatenateTables(parts));
  auto read = ReadAll(bytes);
  ASSERT_TRUE(read->Equals(*expected)) << read->ToString().substr(0, 2000);
  EXPECT_TRUE(read->schema()->Equals(*parts.front()->schema(), /*check_metadata=*/false));
}

TEST(ParquetStitchTest, StitchedFileKeepsStatisticsAndMovesPageIndexesWithThePages) {
  std::vector<StitchInput> inputs = {InputOf(ParquetBytes(*Rows(0, 5000))),
                                     InputOf(ParquetBytes(*Rows(5000, 5000)))};
  ASSERT_OK_AND_ASSIGN(auto bytes, Stitch(inputs));
  auto reader =
      parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(bytes));
  auto footer = reader->metadata();
  auto page_index = reader->GetPageIndexReader();
  ASSERT_NE(page_index, nullptr);
  int out = 0;
  for (const auto& input : inputs) {
    auto source_reader = parquet::ParquetFileReader::Open(input.file);
    auto source_index = source_reader->GetPageIndexReader();
    for (int r = 0; r < input.footer->num_row_groups(); ++r, ++out) {
      auto source_group = input.footer->RowGroup(r);
      auto group = footer->RowGroup(out);
      EXPECT_EQ(group->num_rows(), source_group->num_rows());
      for (int c = 0; c < group->num_columns(); ++c) {
        auto source_chunk = source_group->ColumnChunk(c);
        auto chunk = group->ColumnChunk(c);
        SCOPED_TRACE("row group " + std::to_string(out) + " column " + std::to_string(c));
        EXPECT_EQ(chunk->encodings(), source_chunk->encodings());
        EXPECT_EQ(chunk->compression(), source_chunk->compression());
        EXPECT_EQ(chunk->has_dictionary_page(), source_chunk->has_dictionary_page());
        ASSERT_EQ(chunk->is_stats_set(), source_chunk->is_stats_set());
        if (chunk->is_stats_set()) {
          EXPECT_TRUE(chunk->statistics()->Equals(*source_chunk->statistics()));
        }
        // The offset index names the chunk's own pages, first to last.
        auto offsets = page_index->RowGroup(out)->GetOffsetIndex(c);
        auto source_offsets = source_index->RowGroup(r)->GetOffsetIndex(c);
        ASSERT_NE(offsets, nullptr);
        const auto& pages = offsets->page_locations();
        const auto& source_pages = source_offsets->page_locations();
        ASSERT_EQ(pages.size(), source_pages.size());
        ASSERT_GT(pages.size(), 0u);
        EXPECT_EQ(pages.front().offset, chunk->data_page_offset());
        const int64_t shift =
            chunk->data_page_offset() - source_chunk->data_page_offset();
        for (size_t p = 0; p < pages.size(); ++p) {
          EXPECT_EQ(pages[p].offset, source_pages[p].offset + shift);
          EXPECT_EQ(pages[p].compressed_page_size, source_pages[p].compressed_page_size);
          EXPECT_EQ(pages[p].first_row_index, source_pages[p].first_row_index);
        }
        const int64_t chunk_start = chunk->has_dictionary_page()
                                        ? chunk->dictionary_page_offset()
                                        : chunk->data_page_offset();
        EXPECT_LE(pages.back().offset + pages.back().compressed_page_size,
                  chunk_start + chunk->total_compressed_size());
        // Column indexes are the source's.
        auto column_index = page_index->RowGroup(out)->GetColumnIndex(c);
        auto source_column_index = source_index->RowGroup(r)->GetColumnIndex(c);
        ASSERT_EQ(column_index == nullptr, source_column_index == nullptr);
        if (column_index != nullptr) {
          EXPECT_EQ(column_index->encoded_min_values(),
                    source_column_index->encoded_min_values());
          EXPECT_EQ(column_index->null_pages(), source_column_index->null_pages());
        }
      }
    }
  }
  EXPECT_EQ(out, footer->num_row_groups());
}

TEST(ParquetStitchTest, ColumnsCompressedDifferentlyInEachFileKeepTheirCodecs) {
  auto snappy = ParquetBytes(*Rows(0, 4000));
  auto plain =
      ParquetBytes(*Rows(4000, 4000), Properties(parquet::Compression::UNCOMPRESSED));
  ASSERT_OK_AND_ASSIGN(auto bytes, Stitch({InputOf(snappy), InputOf(plain)}));
  auto reader =
      parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(bytes));
  const int last = reader->metadata()->num_row_groups() - 1;
  EXPECT_EQ(reader->metadata()->RowGroup(0)->ColumnChunk(1)->compression(),
            parquet::Compression::SNAPPY);
  EXPECT_EQ(reader->metadata()->RowGroup(last)->ColumnChunk(1)->compression(),
            parquet::Compression::UNCOMPRESSED);
  ASSERT_OK_AND_ASSIGN(auto expected,
                       arrow::ConcatenateTables({Rows(0, 4000), Rows(4000, 4000)}));
  EXPECT_TRUE(ReadAll(bytes)->Equals(*expected));
}

TEST(ParquetStitchTest, FilesWithDifferentColumnsAreRefusedBeforeAnythingIsWritten) {
  auto other = Rows(0, 100)->RemoveColumn(4);
  ASSERT_OK(other.status());
  std::vector<StitchInput> inputs = {InputOf(ParquetBytes(*Rows(0, 100))),
                                     InputOf(ParquetBytes(**other))};
  auto sink = *arrow::io::BufferOutputStream::Create();
  auto stitched = StitchParquetFiles(inputs, sink.get());
  ASSERT_TRUE(stitched.status().IsNotImplemented()) << stitched.status().ToString();
  EXPECT_NE(stitched.status().message().find("columns differ"), std::string::npos);
  EXPECT_EQ(*sink->Tell(), 0);
}

TEST(ParquetStitchTest, StructsNamedDifferentlyAreRefused) {
  auto rows = Rows(0, 100);
  auto renamed = rows->RenameColumns({"id", "name", "other", "items", "value"});
  ASSERT_OK(renamed.status());
  // Without the Arrow schema in the footers, only the Parquet schema tells them apart.
  std::vector<StitchInput> inputs = {
      InputOf(ParquetBytes(*rows, Properties(), /*store_schema=*/false)),
      InputOf(ParquetBytes(**renamed, Properties(), /*store_schema=*/false))};
  EXPECT_TRUE(CheckStitchable(inputs).IsNotImplemented());
}

TEST(ParquetStitchTest, FilesFromAnotherWriterAreRefused) {
  auto theirs = parquet::WriterProperties::Builder()
                    .enable_write_page_index()
                    ->created_by("parquet-mr version 1.13.1")
                    ->build();
  std::vector<StitchInput> inputs = {InputOf(ParquetBytes(*Rows(0, 100))),
                                     InputOf(ParquetBytes(*Rows(100, 100), theirs))};
  EXPECT_TRUE(CheckStitchable(inputs).IsNotImplemented());
}

TEST(ParquetStitchTest, FileWithoutRowsStitchesToTheOthersRows) {
  std::vector<StitchInput> inputs = {InputOf(ParquetBytes(*Rows(0, 0))),
                                     InputOf(ParquetBytes(*Rows(0, 3500)))};
  ASSERT_OK_AND_ASSIGN(auto bytes, Stitch(inputs));
  EXPECT_TRUE(ReadAll(bytes)->Equals(*Rows(0, 3500)));
  ASSERT_OK_AND_ASSIGN(auto empty, Stitch({InputOf(ParquetBytes(*Rows(0, 0)))}));
  EXPECT_EQ(ReadAll(empty)->num_rows(), 0);
}

TEST(ParquetStitchTest, TruncatedInputFailsWithoutStitching) {
  auto bytes = ParquetBytes(*Rows(0, 5000));
  StitchInput input = InputOf(bytes);
  // The footer of the whole file, the bytes cut after the first kilobyte.
  input.file =
      std::make_shared<arrow::io::BufferReader>(arrow::SliceBuffer(bytes, 0, 1024));
  auto sink = *arrow::io::BufferOutputStream::Create();
  EXPECT_FALSE(StitchParquetFiles({input}, sink.get()).ok());
}

}  // namespace
}  // namespace ampdelta::delta
