#pragma once

/// \file local_store.h
/// \brief ObjectStore on a local (POSIX) file system.

#include <memory>
#include <string>
#include <vector>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief Objects are files under a root directory. Thread-safe and safe across
/// processes: create-if-absent stages a temporary file and publishes it with link(2),
/// which fails if the name exists, so exactly one concurrent writer wins. Files and their
/// directory are fsync'ed before a write returns.
class LocalStore : public ObjectStore {
 public:
  /// \brief Open a store rooted at `root` (created lazily by the first write).
  static arrow::Result<std::shared_ptr<LocalStore>> Make(const std::string& root);

  std::string root_uri() const override;
  bool is_file_system() const override { return true; }
  /// Also `file:` URIs and absolute paths, compared as file system paths.
  std::optional<std::string> KeyOf(const std::string& location) const override;
  arrow::Result<ObjectMeta> Head(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Get(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> GetRange(const std::string& path,
                                                         int64_t offset,
                                                         int64_t length) override;
  arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenInputFile(
      const std::string& path) override;
  arrow::Result<std::vector<ObjectMeta>> List(const std::string& prefix,
                                              const std::string& start_after) override;
  arrow::Status Put(const std::string& path, const std::shared_ptr<arrow::Buffer>& data,
                    PutMode mode) override;
  arrow::Status Delete(const std::string& path) override;
  void RemoveFolderIfEmpty(const std::string& path) override;
  arrow::Result<std::shared_ptr<arrow::io::OutputStream>> OpenOutputStream(
      const std::string& path) override;
  /// \brief List hidden temporary files (`.ampdelta-tmp-<process>-<name>.<uuid>`).
  arrow::Result<std::vector<StagingObject>> ListStaging(
      const std::string& prefix) override;

  /// \brief Return the absolute root directory.
  const std::string& root() const { return root_; }

 private:
  LocalStore(std::string root, bool root_existed,
             std::vector<std::string> missing_parents)
      : root_(std::move(root)),
        root_existed_(root_existed),
        missing_parents_(std::move(missing_parents)) {}
  arrow::Result<std::string> FullPath(const std::string& path) const;
  // Regular files under `prefix`: published ones, or (staging) temporary ones only.
  arrow::Result<std::vector<ObjectMeta>> Walk(const std::string& prefix,
                                              const std::string& start_after,
                                              bool staging) const;

  std::string root_;
  // Whether the root folder existed when the store was opened (RemoveFolderIfEmpty("")
  // removes only one it did not find), and its parent folders that did not, deepest
  // first: a write creates them, and RemoveFolderIfEmpty("") removes them again.
  bool root_existed_;
  std::vector<std::string> missing_parents_;
};

}  // namespace ampdelta::storage
