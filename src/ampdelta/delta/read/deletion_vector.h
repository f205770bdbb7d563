#pragma once

/// \file deletion_vector.h
/// \brief Deletion vectors: the sets of row indexes a DV removes from a data file, read
/// and encoded (PROTOCOL.md "Deletion Vectors" and "Deletion Vector Format").

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Decode Z85 text (the Base85 variant of ZeroMQ RFC 32 that Delta uses for inline
/// DVs and UUID-named DV files).
///
/// \param[in] text Z85 characters; the length must be a multiple of 5
/// \return 4 bytes per 5 characters; Status::Invalid for a bad length, a character
///   outside the Z85 alphabet, or a group whose value does not fit 32 bits
arrow::Result<std::string> DecodeZ85(std::string_view text);

/// \brief Encode bytes as Z85 text.
///
/// \param[in] bytes the data; the length must be a multiple of 4
/// \return 5 characters per 4 bytes; Status::Invalid for a bad length
arrow::Result<std::string> EncodeZ85(std::string_view bytes);

/// \brief The deleted row indexes of one data file, held as 32-bit roaring bitmaps keyed
/// by the high 32 bits of the row index (the shape of the on-disk format).
///
/// Immutable once built, so thread-safe; copies are cheap and share the bitmaps.
class DeletedRows {
 public:
  /// \brief Build an empty set (a file without a DV).
  DeletedRows();

  /// \brief Build a set from row indexes in any order; duplicates collapse.
  ///
  /// \param[in] rows the deleted row indexes
  /// \return the set; Status::OutOfMemory if a bitmap cannot be allocated
  static arrow::Result<DeletedRows> FromRows(const std::vector<uint64_t>& rows);

  /// \brief Return the rows deleted in this set or in `other`.
  /// \return the union; Status::OutOfMemory if a bitmap cannot be allocated
  arrow::Result<DeletedRows> Union(const std::vector<uint64_t>& other) const;

  /// \brief Return true when row `row` (0-based index in file order) is deleted.
  bool Contains(uint64_t row) const;

  /// \brief Return the number of deleted rows.
  int64_t cardinality() const;

  /// \brief Return true when no row is deleted.
  bool empty() const { return cardinality() == 0; }

  /// \brief Return the deleted row indexes in ascending order. Materialises the whole
  /// set (8 bytes a row): meant for tests and small DVs.
  std::vector<uint64_t> ToVector() const;

  /// \brief Build the keep-mask of the file rows [offset, offset + length): element i is
  /// false when row offset + i is deleted. The mask has no nulls.
  ///
  /// \param[in] offset index of the first row of the range
  /// \param[in] length number of rows in the range
  /// \param[in] pool allocator of the mask's buffer
  /// \return the mask; Status::Invalid for a negative or overflowing range
  arrow::Result<std::shared_ptr<arrow::BooleanArray>> KeepMask(
      int64_t offset, int64_t length,
      arrow::MemoryPool* pool = arrow::default_memory_pool()) const;

 private:
  class Impl;
  explicit DeletedRows(std::shared_ptr<const Impl> impl);

  friend arrow::Result<DeletedRows> ParseRoaring64Portable(std::string_view bytes);
  friend std::string SerializeRoaring64Portable(const DeletedRows& rows);

  /// Null for the empty set.
  std::shared_ptr<const Impl> impl_;
};

/// \brief Parse DV bitmap bytes: the 4-byte little-endian magic number 1681511377
/// followed by a 64-bit roaring bitmap in the "portable" serialization (an 8-byte bucket
/// count, then per bucket a 4-byte key holding the high 32 bits and a 32-bit portable
/// roaring bitmap).
///
/// \param[in] bytes the serialized bitmap, exactly (trailing bytes are an error)
/// \return the deleted rows; ErrorCode::kCorruptLog (IOError) for a bad magic number,
///   truncated or malformed bitmaps, bucket keys out of order or with the high bit set;
///   ErrorCode::kUnsupportedFeature (NotImplemented) for the Java-only "native" format
arrow::Result<DeletedRows> ParseRoaring64Portable(std::string_view bytes);

/// \brief Serialize a set as ParseRoaring64Portable reads it: the magic number, then the
/// 64-bit portable roaring serialization (run containers where they are smaller).
std::string SerializeRoaring64Portable(const DeletedRows& rows);

/// \brief Return the bytes of a DV file holding one bitmap: format version 1, then the
/// bitmap's 4-byte big-endian length, the bitmap, and its big-endian CRC-32. The bitmap
/// starts at offset 1 (the descriptor's `offset`), its length is `sizeInBytes`.
std::string EncodeDeletionVectorFile(std::string_view bitmap);

/// \brief Return the `pathOrInlineDv` of a `u` DV: `prefix` followed by the Z85 text of
/// the 16 bytes of `uuid` (canonical 8-4-4-4-12 hex form); Status::Invalid for a
/// malformed UUID.
arrow::Result<std::string> UuidDeletionVectorPathOrInline(const std::string& prefix,
                                                          std::string_view uuid);

/// \brief Return the key, relative to the table root, of a `u` (UUID-named) DV file:
/// `[<prefix>/]deletion_vector_<uuid>.bin`.
///
/// \param[in] path_or_inline_dv an optional random prefix and 20 Z85 characters encoding
///   the 16 bytes of the UUID
/// \return the key; ErrorCode::kCorruptLog (IOError) when the text is too short or is
///   not Z85
arrow::Result<std::string> UuidDeletionVectorPath(std::string_view path_or_inline_dv);

/// \brief Return the key of the file a descriptor's DV lives in when it has one of its
/// own (storage type `u`), relative to the table root; nullopt for inline, absolute-path
/// and malformed descriptors (what vacuum and restore must keep or bring back).
std::optional<std::string> DeletionVectorFileKey(
    const std::optional<DeletionVectorDescriptor>& dv);

/// \brief Load and verify the deletion vector a descriptor points to.
///
/// Storage types: `i` decodes the inline Z85 bitmap; `u` reads the UUID-named file under
/// the table root; `p` reads an absolute path or URI, which must lie under the store's
/// root. DV files are checked against the descriptor: format version 1, the length field
/// equals `sizeInBytes`, the CRC-32 of the bitmap matches, and the decoded cardinality
/// equals `cardinality`.
///
/// \param[in] table_store the store rooted at the table root
/// \param[in] dv the descriptor from an `add` or `remove` action
/// \return the deleted rows. Errors: ErrorCode::kCorruptLog (IOError) when the DV is
///   malformed or disagrees with its descriptor (the message names the DV and what
///   differs); ErrorCode::kUnsupportedFeature (NotImplemented) for a `p` path outside the
///   store; ErrorCode::kNotFound when the DV file is missing; other store errors as
///   returned by the store.
arrow::Result<DeletedRows> LoadDeletionVector(storage::ObjectStore& table_store,
                                              const DeletionVectorDescriptor& dv);

}  // namespace ampdelta::delta
