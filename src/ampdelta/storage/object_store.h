#pragma once

/// \file object_store.h
/// \brief The narrow storage interface the Delta engine talks to.
///
/// Keys are `/`-separated paths relative to the store's root (no leading `/`). The one
/// primitive a Delta commit needs beyond plain reads and writes is create-if-absent:
/// exactly one of several concurrent writers of a key succeeds (S3/Azure
/// `If-None-Match: *`, GCS `ifGenerationMatch=0`, POSIX link/renameat2 no-replace).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/io/type_fwd.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include "ampdelta/util/process_identity.h"

namespace ampdelta::storage {

/// \brief What a listing or head returns about one object.
struct ObjectMeta {
  /// Key relative to the store root.
  std::string path;
  int64_t size = 0;
  /// Last modification, milliseconds since the Unix epoch.
  int64_t last_modified_ms = 0;
};

/// \brief A temporary object in which a store stages a write (see ListStaging).
struct StagingObject {
  /// Key relative to the store root; Delete() removes it.
  std::string path;
  int64_t size = 0;
  int64_t last_modified_ms = 0;
  /// The process that staged it, when the store records one.
  std::optional<ProcessIdentity> owner;
};

/// \brief How Put treats an existing object.
enum class PutMode : uint8_t {
  /// Replace any existing object.
  kOverwrite,
  /// Fail with ErrorCode::kPreconditionFailed if the object exists; atomic against
  /// concurrent writers of the same key.
  kCreateIfAbsent,
};

/// \brief A flat key/value object store. Implementations are thread-safe.
///
/// Errors: a missing object is ErrorCode::kNotFound; a create-if-absent that lost is
/// ErrorCode::kPreconditionFailed; anything else is an IOError naming the key.
class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  /// \brief Return the store's root as a URI (for messages and absolute paths).
  virtual std::string root_uri() const = 0;

  /// \brief Return true when keys are files in the folders of a file system: a file can
  /// then stand where a folder of keys should be (List fails, subcode "ENOTDIR") or a
  /// folder where a key should be (Head fails, subcode "EISDIR"), and looking at an
  /// object costs a system call rather than a request.
  virtual bool is_file_system() const { return false; }

  /// \brief Return the key that `location` (an absolute, percent-encoded URI; for a
  /// file-system store also an absolute path) names inside this store, or nullopt when it
  /// lies outside the root or is not a normal key (`..`, `.` or empty segments).
  virtual std::optional<std::string> KeyOf(const std::string& location) const;

  /// \brief Return an object's metadata.
  virtual arrow::Result<ObjectMeta> Head(const std::string& path) = 0;

  /// \brief Return an object's whole content.
  virtual arrow::Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& path) = 0;

  /// \brief Return `length` bytes from `offset` (fewer at the end of the object).
  virtual arrow::Result<std::shared_ptr<arrow::Buffer>> GetRange(const std::string& path,
                                                                 int64_t offset,
                                                                 int64_t length) = 0;

  /// \brief Open an object for random access (Parquet readers use this).
  virtual arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(
      const std::string& path) = 0;

  /// \brief List every object whose key starts with `prefix` and sorts after
  /// `start_after`, in lexicographic key order, recursively.
  virtual arrow::Result<std::vector<ObjectMeta>> List(
      const std::string& prefix, const std::string& start_after = "") = 0;

  /// \brief Write an object in one call; the object appears whole or not at all.
  virtual arrow::Status Put(const std::string& path,
                            const std::shared_ptr<arrow::Buffer>& data, PutMode mode) = 0;

  /// \brief Delete an object; deleting a missing object succeeds.
  virtual arrow::Status Delete(const std::string& path) = 0;

  /// \brief Remove the folder `path` (a key prefix without its `/`; "" is the root, with
  /// the parent folders the store created for it) when it holds nothing. Only a file
  /// system has folders, so that a write that left nothing leaves no trace either; an
  /// object store has none (the default does nothing).
  virtual void RemoveFolderIfEmpty(const std::string& path) { (void)path; }

  /// \brief Open a streaming writer for a large object. The object becomes visible,
  /// whole, when the stream is closed successfully; an abandoned stream leaves nothing
  /// behind.
  virtual arrow::Result<std::shared_ptr<arrow::io::OutputStream>> OpenOutputStream(
      const std::string& path) = 0;

  /// \brief Delete several objects; the default deletes them one by one and returns the
  /// first error after trying all.
  virtual arrow::Status DeleteMany(const std::vector<std::string>& paths);

  /// \brief Delete what an abandoned write made: the objects at `paths` (as DeleteMany),
  /// then the folders they leave empty up to the root (RemoveFolderIfEmpty), so that a
  /// failed write leaves no partition folder behind; `folders` are keys of objects that
  /// were staged but never published, whose folders are removed the same way.
  arrow::Status DeleteWithFolders(const std::vector<std::string>& paths,
                                  const std::vector<std::string>& folders = {});

  /// \brief List the temporary objects under `prefix` that writes stage before they
  /// publish (a local store's hidden temporary files): those of writes in flight and
  /// those a crashed writer left. List() never returns them. The default (stores that
  /// stage nothing visible, such as S3 multipart uploads) returns none.
  virtual arrow::Result<std::vector<StagingObject>> ListStaging(
      const std::string& prefix);
};

/// \brief Return absolute path `path` relative to absolute path `root` when it lies
/// strictly inside it (lexically: no `..` leaves it).
std::optional<std::string> RelativePathUnder(const std::string& root,
                                             const std::string& path);

/// \brief Join key segments with `/`, dropping empty ones.
std::string JoinPath(std::string_view base, std::string_view child);

}  // namespace ampdelta::storage
