#pragma once

/// \file schema.h
/// \brief Delta schemas (PROTOCOL.md "Schema Serialization Format") as Arrow schemas, and
/// the mapping from the Arrow types Amp sends to the types Delta can store (product.md
/// §6).
///
/// A table schema is an arrow::Schema using only Delta-representable types: int8…int64,
/// float32/64, bool, utf8, binary, date32, timestamp(µs, "UTC") (Delta `timestamp`),
/// timestamp(µs) (Delta `timestamp_ntz`), decimal128, list, map, struct, null (`void`).
/// Delta field metadata is kept on Arrow fields, one key per entry, values as JSON text.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace ampdelta::delta {

/// \brief How unsigned integers become Delta's signed ones in a new column.
enum class IntegerMapping : uint8_t {
  /// Widened so every value fits: uint8 → short, uint16 → integer, uint32 → long;
  /// uint64 as Unsigned64::kAuto says. ampdelta's default.
  kLossless,
  /// deltalake's (and so the Python SDK's) mapping, the same width: uint8 → byte,
  /// uint16 → short, uint32 → integer, uint64 → long; a value that does not fit fails
  /// the write, naming it.
  kSameWidth,
};

/// \brief How integers wider than Delta's decimal(38) — Amp's Decimal256(76, 0) for
/// Solidity's uint128 … uint248 — become a new column (docs/wide-integers.md).
enum class WideIntegers : uint8_t {
  /// Their decimal text (`-12`, as Amp writes uint256): every value, every reader, no
  /// arithmetic without a cast. ampdelta's default.
  kString,
  /// decimal(38, s): arithmetic in every reader; a value with more than 38 digits fails
  /// the write, naming the column, the value and the row.
  kDecimal,
};

/// \brief How a new uint64 column or field is stored (docs/wide-integers.md). A value
/// stored as long that is above 2^63-1 fails the write, naming the column, value and row.
enum class Unsigned64 : uint8_t {
  /// Columns long, as the SDK stores Amp's (`block_num`, `gas_used`: i64); fields of
  /// structs and lists (decoded `uint64`s) decimal(20,0), which holds every value.
  /// ampdelta's default.
  kAuto,
  /// Every uint64 but block numbers decimal(20,0) (a pre-merge block's `nonce`).
  kDecimal,
  /// Every uint64 long (the SDK's mapping).
  kLong,
};

/// \brief The choices a new table's column types follow.
struct TypeMapping {
  TypeMapping(IntegerMapping integer_mapping = IntegerMapping::kLossless,  // NOLINT
              WideIntegers wide = WideIntegers::kString)
      : integers(integer_mapping),
        wide_integers(wide),
        unsigned64(integer_mapping == IntegerMapping::kLossless ? Unsigned64::kAuto
                                                                : Unsigned64::kLong) {}
  IntegerMapping integers;
  WideIntegers wide_integers;
  Unsigned64 unsigned64;
  /// Top-level uint64 columns holding block numbers, compared case-insensitively: long
  /// under every mapping (Unsigned64::kDecimal included). A chain reaches 2^63 blocks in
  /// billions of years, and the loader's reorg, resume and backfill predicates compare
  /// block numbers as long.
  std::vector<std::string> block_columns{"_block_num", "block_num"};
  /// The table has column mapping (column_mapping.h): column names may hold the
  /// characters Spark refuses in physical names (` ,;{}()\n\t=`).
  bool column_mapping = false;
};

/// \brief Map a source (Amp) schema to the table schema ampdelta writes: unsigned
/// integers as `integers` says, timestamps → µs (tz-aware → `timestamp`, naive →
/// `timestamp_ntz`), fixed/large binaries → binary, large/view strings → string,
/// dictionaries → their value type, FixedSizeList/LargeList → list.
/// Decimal256 becomes decimal128 when its precision fits 38 digits, else as `mapping`
/// says.
/// \return Invalid naming the column and type for Float16, time, duration,
///   interval, union and other types Delta cannot store, or duplicate column names
///   (compared case-insensitively)
arrow::Result<std::shared_ptr<arrow::Schema>> ToTableSchema(
    const arrow::Schema& source, const TypeMapping& mapping = {});

/// \brief ToTableSchema for a write into an existing `table`: a column of wide integers
/// (or uint64s) the table already has keeps the table's representation (text or
/// decimal(38); decimal(20,0) or long), whatever `mapping` says: the policy chooses only
/// for new columns.
arrow::Result<std::shared_ptr<arrow::Schema>> ToTableSchemaInto(
    const arrow::Schema& source, const TypeMapping& mapping, const arrow::Schema& table);

/// \brief Return true when data of (table) type `data` may be written into a column of
/// type `column`: the same type, a narrower float (always fits), a date into a
/// timestamp without time zone, integers of any width and decimals of any precision and
/// of the same or a larger scale (converted value by value: one that does not fit fails
/// the write, naming it), and structs whose fields may each be written so.
bool CanWriteInto(const arrow::DataType& data, const arrow::DataType& column);

/// \brief Convert a batch to `table_schema` (same column names, in the table's order;
/// columns the batch lacks become nulls). Timestamps are truncated to microseconds.
/// \return Invalid naming the column and value when a value does not fit (e.g. a UInt64
///   above 2^63-1), when a column is missing but not nullable, when the batch has a
///   column the table lacks, or when a column's type cannot be written into the table's
///   (CanWriteInto)
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ConformBatch(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& table_schema);

/// \brief Return the index of the field named `name` compared case-insensitively (Delta
/// column names are), preferring an exact match; -1 when there is none.
int FindFieldIgnoreCase(const arrow::Schema& schema, const std::string& name);

/// \brief For a name like `swap.tick` that is a field of a struct column of `schema`: a
/// hint (with a leading space) that partitioning and clustering take top-level columns,
/// so the field must be selected as one (`evm_decode_log(…)['tick'] AS tick`); else "".
std::string NestedFieldHint(const arrow::Schema& schema, const std::string& name);

/// \brief Return `text` with control characters and non-ASCII bytes as `\xNN`, for
/// messages that must stay one readable line whatever the input holds.
std::string EscapeForMessage(const std::string& text);

/// \brief Return true when a table schema needs the `timestampNtz` feature.
bool NeedsTimestampNtz(const arrow::Schema& schema);

/// \brief Return the physical name of a field under column mapping, or its name.
std::string PhysicalName(const arrow::Field& field);

/// \brief Key under which Delta's field metadata entries are kept: the entry name itself;
/// these helpers read one as JSON text.
std::optional<std::string> FieldMetadataValue(const arrow::Field& field,
                                              const std::string& key);

}  // namespace ampdelta::delta
