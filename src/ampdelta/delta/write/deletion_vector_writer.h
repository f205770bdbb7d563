#pragma once

/// \file deletion_vector_writer.h
/// \brief Delete rows of a data file by marking them in a deletion vector instead of
/// rewriting the file (`delta.enableDeletionVectors`, PROTOCOL.md "Deletion Vectors").
///
/// The file stays; the commit removes its logical file (path and old DV) and adds it
/// again with a DV of every deleted row, old and new. Each call writes one DV file,
/// `<lease token>/deletion_vector_<uuid>.bin` under the table root (the token is the
/// descriptor's random prefix, as Spark names its folders): the folder names the write
/// lease, so a vacuum leaves the file alone until the commit references it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/snapshot.h"
#include "ampdelta/storage/object_store.h"

namespace ampdelta::delta {

/// \brief Return true when row deletions in the table are to be marked in deletion
/// vectors: `delta.enableDeletionVectors` is true and the protocol has the
/// `deletionVectors` feature.
bool WritesDeletionVectors(const Snapshot& snapshot);

/// \brief Writes the deletion vectors of one commit. Thread-compatible.
class DeletionVectorWriter {
 public:
  /// \param[in] store the table's store (rooted at the table)
  /// \param[in] token the write lease's token, which names the DV files' folder
  DeletionVectorWriter(std::shared_ptr<storage::ObjectStore> store, std::string token);

  /// \brief Mark the rows of `file` that `keep` leaves out as deleted.
  ///
  /// \param[in] file a live file of the table
  /// \param[in] keep one element per live row of the file, in file order (as
  ///   ReadDataFile returns them): a row is kept when its element is true; false and
  ///   null delete it, as arrow::compute::Filter drops them
  /// \return the `add` that replaces the file, to commit with RemoveFor(file): the same
  ///   path and tags, a DV of every deleted row, `numRecords` the file's physical rows
  ///   and `tightBounds` false in its statistics, dataChange true. Errors: Invalid when
  ///   `keep` deletes no row or every row (a file that keeps no row is removed, not
  ///   marked) or its length is not the file's live row count by its statistics; errors
  ///   loading the file's DV or writing the new one.
  arrow::Result<Add> MarkDeleted(const Add& file, const arrow::Array& keep);

  /// \brief Return the table-relative keys of the DV files written so far.
  const std::vector<std::string>& files() const { return files_; }

  /// \brief Delete the DV files written so far (a commit that did not happen).
  arrow::Status Abort();

 private:
  std::shared_ptr<storage::ObjectStore> store_;
  std::string token_;
  std::vector<std::string> files_;
};

}  // namespace ampdelta::delta
