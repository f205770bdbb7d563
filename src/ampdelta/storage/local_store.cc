#include "ampdelta/storage/local_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <arrow/util/io_util.h>
#include <arrow/util/uri.h>
#include <sys/stat.h>

#include "ampdelta/storage/location.h"
#include "ampdelta/util/process_identity.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::storage {
namespace {

namespace fs = std::filesystem;

// Temporary files are hidden and carry this marker, so listings skip them.
constexpr std::string_view kTempMarker = ".ampdelta-tmp-";

arrow::Status ErrnoError(const char* what, const std::string& path, int error) {
  return StorageErrnoError(what, path, error);
}

int64_t MtimeMs(const struct stat& info) {
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000 +
         info.st_mtim.tv_nsec / 1'000'000;
}

// `.ampdelta-tmp-<process>-<name>.<uuid>`: the writing process is named so a vacuum can
// tell a crashed writer's leftovers from a write in flight (ListStaging).
std::string TempPathFor(const std::string& full) {
  const fs::path target(full);
  return (target.parent_path() / (std::string(kTempMarker) + CurrentProcess().ToString() +
                                  "-" + target.filename().string() + "." + NewUuid()))
      .string();
}

std::optional<ProcessIdentity> TempOwner(const std::string& name) {
  const std::string_view rest = std::string_view(name).substr(kTempMarker.size());
  const size_t dash = rest.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return ProcessIdentity::Parse(rest.substr(0, dash));
}

arrow::Status EnsureParent(const std::string& full) {
  std::error_code error;
  fs::create_directories(fs::path(full).parent_path(), error);
  if (error) return StorageErrnoError("cannot create directory for", full, error.value());
  return arrow::Status::OK();
}

arrow::Status SyncDirectory(const std::string& full) {
  const std::string dir = fs::path(full).parent_path().string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync directory", dir, error);
  return arrow::Status::OK();
}

// Create the staging file `temp` for `full` with `create` (an errno-setting open: -1 on
// failure), its folders first. A folder an empty-folder cleanup (RemoveFolderIfEmpty)
// removed between the two is created again.
template <typename Create>
arrow::Result<int> CreateStaged(const std::string& full, const std::string& temp,
                                Create create) {
  for (int attempt = 0;; ++attempt) {
    ARROW_RETURN_NOT_OK(EnsureParent(full));
    const int fd = create(temp);
    if (fd >= 0 || errno != ENOENT || attempt == 2) {
      if (fd < 0) return ErrnoError("create", temp, errno);
      return fd;
    }
  }
}

// Write `data` to a new file at `path` (for `full`) and fsync it.
arrow::Status WriteSynced(const std::string& full, const std::string& path,
                          const arrow::Buffer& data) {
  ARROW_ASSIGN_OR_RAISE(const int fd, CreateStaged(full, path, [](const std::string& p) {
                          return ::open(p.c_str(),
                                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                        }));
  const uint8_t* bytes = data.data();
  int64_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, bytes, static_cast<size_t>(left));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return ErrnoError("write", path, error);
    }
    bytes += n;
    left -= n;
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError("fsync", path, error);
  }
  if (::close(fd) != 0) return ErrnoError("close", path, errno);
  return arrow::Status::OK();
}

// Arrow's file streams report errno in a StatusDetail that message() drops: name the file
// and the cause, classified as a storage error.
arrow::Status FileError(const arrow::Status& status, const char* what,
                        const std::string& path) {
  if (status.ok()) return status;
  const int error = arrow::internal::ErrnoFromStatus(status);
  if (error > 0) return StorageErrnoError(what, path, error);
  return MakeError(ErrorCode::kStorageError, arrow::StatusCode::IOError, what, " ", path,
                   ": ", status.message())
      .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kStorageError, "io"));
}

// Publish a staged file under its final name. Without replacement, link(2) fails with
// EEXIST when the name exists: the atomic create-if-absent.
arrow::Status Publish(const std::string& temp, const std::string& full, PutMode mode) {
  if (mode == PutMode::kOverwrite) {
    if (::rename(temp.c_str(), full.c_str()) != 0) {
      const int error = errno;
      ::unlink(temp.c_str());
      return ErrnoError("rename to", full, error);
    }
    return SyncDirectory(full);
  }
  const int rc = ::link(temp.c_str(), full.c_str());
  const int error = errno;
  ::unlink(temp.c_str());
  if (rc != 0) {
    if (error == EEXIST) {
      return MakeError(ErrorCode::kPreconditionFailed, arrow::StatusCode::AlreadyExists,
                       "object already exists: ", full);
    }
    return ErrnoError("link to", full, error);
  }
  return SyncDirectory(full);
}

// An output stream to a hidden temporary file, renamed into place on Close().
class LocalOutputStream : public arrow::io::OutputStream {
 public:
  static arrow::Result<std::shared_ptr<LocalOutputStream>> Open(std::string full) {
    std::string temp = TempPathFor(full);
    ARROW_ASSIGN_OR_RAISE(
        const int fd, CreateStaged(full, temp, [](const std::string& p) {
          return ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        }));
    auto file = arrow::io::FileOutputStream::Open(fd);
    if (!file.ok()) {
      ::close(fd);
      ::unlink(temp.c_str());
      return FileError(file.status(), "create", full);
    }
    return std::shared_ptr<LocalOutputStream>(
        new LocalOutputStream(std::move(full), std::move(temp), std::move(*file)));
  }

  ~LocalOutputStream() override {
    if (!closed_) {
      (void)file_->Close();
      ::unlink(temp_.c_str());
    }
  }

  arrow::Status Close() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    arrow::Status status = FileError(file_->Flush(), "write", full_);
    if (status.ok() && ::fsync(file_->file_descriptor()) != 0) {
      status = ErrnoError("fsync", full_, errno);
    }
    arrow::Status close_status = FileError(file_->Close(), "close", full_);
    if (status.ok()) status = close_status;
    if (!status.ok()) {
      ::unlink(temp_.c_str());
      return status;
    }
    return Publish(temp_, full_, PutMode::kOverwrite);
  }

  arrow::Status Abort() override {
    if (closed_) return arrow::Status::OK();
    closed_ = true;
    arrow::Status status = file_->Abort();
    ::unlink(temp_.c_str());
    return status;
  }

  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return file_->Tell(); }
  arrow::Status Write(const void* data, int64_t nbytes) override {
    ARROW_RETURN_NOT_OK(FileError(file_->Write(data, nbytes), "write", full_));
    return StartWriteback(nbytes);
  }
  arrow::Status Write(const std::shared_ptr<arrow::Buffer>& data) override {
    ARROW_RETURN_NOT_OK(FileError(file_->Write(data), "write", full_));
    return StartWriteback(data->size());
  }
  arrow::Status Flush() override { return FileError(file_->Flush(), "write", full_); }

 private:
  LocalOutputStream(std::string full, std::string temp,
                    std::shared_ptr<arrow::io::FileOutputStream> file)
      : full_(std::move(full)), temp_(std::move(temp)), file_(std::move(file)) {}

  // Ask the kernel to start writing back every few MiB as they are written, so the fsync
  // on Close (the file must be durable before a commit names it) has little left to wait
  // for, and disk writes overlap encoding instead of following it.
  arrow::Status StartWriteback(int64_t nbytes) {
    written_ += nbytes;
    if (written_ - synced_ < kWritebackBytes) return arrow::Status::OK();
    (void)::sync_file_range(file_->file_descriptor(), synced_, written_ - synced_,
                            SYNC_FILE_RANGE_WRITE);  // advisory: errors surface in fsync
    synced_ = written_;
    return arrow::Status::OK();
  }

  static constexpr int64_t kWritebackBytes = 8 << 20;
  std::string full_;
  std::string temp_;
  std::shared_ptr<arrow::io::FileOutputStream> file_;
  int64_t written_ = 0;
  int64_t synced_ = 0;
  bool closed_ = false;
};

}  // namespace

arrow::Result<std::shared_ptr<LocalStore>> LocalStore::Make(const std::string& root) {
  if (root.empty()) return InvalidInputError("local store root is empty");
  std::error_code error;
  fs::path absolute = fs::absolute(fs::path(root), error);
  if (error)
    return arrow::Status::IOError("cannot resolve path ", root, ": ", error.message());
  std::string normalized = absolute.lexically_normal().string();
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();
  // The root is created by the first write; whatever is in its way is the caller's
  // mistake.
  const auto status = fs::symlink_status(normalized, error);
  if (!error && fs::is_symlink(status) && !fs::exists(normalized, error)) {
    return InvalidInputError("table path ", normalized, " is a symbolic link to ",
                             fs::read_symlink(normalized, error).string(),
                             ", which does not exist");
  }
  if (!error && fs::exists(status) && !fs::is_directory(normalized, error)) {
    return InvalidInputError("table path ", normalized, " is a file, not a folder");
  }
  std::vector<std::string> missing_parents;
  for (fs::path parent = fs::path(normalized).parent_path(); !parent.empty();
       parent = parent.parent_path()) {
    std::error_code ignored;
    if (!fs::exists(parent, ignored)) missing_parents.push_back(parent.string());
    if (fs::exists(parent, ignored)) {
      if (!fs::is_directory(parent, ignored)) {
        return InvalidInputError("table path ", normalized,
                                 " cannot be created: ", parent.string(),
                                 " is a file, not a folder");
      }
      break;
    }
    if (parent == parent.root_path()) break;
  }
  std::error_code ignored;
  const bool root_existed = fs::exists(normalized, ignored);
  return std::shared_ptr<LocalStore>(
      new LocalStore(std::move(normalized), root_existed, std::move(missing_parents)));
}

std::string LocalStore::root_uri() const { return "file://" + root_; }

std::optional<std::string> LocalStore::KeyOf(const std::string& location) const {
  // The root URI is `file://` plus the raw (unescaped) directory: a location spelled
  // differently (encoded, `file:/`, a bare path) is compared as a file system path.
  if (auto key = ObjectStore::KeyOf(location)) return key;
  std::optional<std::string> path;
  if (location.rfind("file:", 0) == 0) {
    arrow::util::Uri uri;
    if (uri.Parse(location).ok()) {
      if (uri.host().empty() || uri.host() == "localhost") path = uri.path();
    } else {
      // Not a valid URI (a raw space, say), as some writers log them: its decoded path.
      path = CanonicalLocation(location);
    }
  } else if (!location.empty() && location.front() == '/') {
    path = arrow::util::UriUnescape(location);
  }
  if (!path) return std::nullopt;
  return RelativePathUnder(root_, *path);
}

arrow::Result<std::string> LocalStore::FullPath(const std::string& path) const {
  if (path.empty() || path.front() == '/') {
    return InvalidInputError("object key must be a relative path: '", path, "'");
  }
  for (const auto& part : fs::path(path)) {
    if (part == "..")
      return InvalidInputError("object key escapes the root: '", path, "'");
  }
  return root_ + "/" + path;
}

arrow::Result<ObjectMeta> LocalStore::Head(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string full, FullPath(path));
  struct stat info {};
  if (::stat(full.c_str(), &info) != 0) return ErrnoError("stat", full, errno);
  if (!S_ISREG(info.st_mode)) {
    // No object has this key; the subcode tells a folder in its way from nothing.
    return NotFoundError("not a file: ", full)
        .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kNotFound,
                                                  S_ISDIR(info.st_mode) ? "EISDIR" : ""));
  }
  return ObjectMeta{path, static_cast<int64_t>(info.st_size), MtimeMs(info)};
}

arrow::Result<std::shared_ptr<arrow::Buffer>> LocalStore::Get(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto file, OpenInputFile(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  return file->ReadAt(0, size);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> LocalStore::GetRange(
    const std::string& path, int64_t offset, int64_t length) {
  ARROW_ASSIGN_OR_RAISE(auto file, OpenInputFile(path));
  return file->ReadAt(offset, length);
}

arrow::Result<std::shared_ptr<arrow::io::RandomAccessFile>> LocalStore::OpenInputFile(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string full, FullPath(path));
  struct stat info {};
  if (::stat(full.c_str(), &info) != 0) return ErrnoError("open", full, errno);
  if (!S_ISREG(info.st_mode)) return NotFoundError("not a file: ", full);
  auto file = arrow::io::ReadableFile::Open(full);
  if (!file.ok()) return FileError(file.status(), "open", full);
  return *file;
}

arrow::Result<std::vector<ObjectMeta>> LocalStore::Walk(const std::string& prefix,
                                                        const std::string& start_after,
                                                        bool staging) const {
  // Walk from the deepest directory the prefix names, then filter by the full prefix.
  const size_t slash = prefix.rfind('/');
  const std::string base = slash == std::string::npos ? "" : prefix.substr(0, slash);
  const fs::path start = base.empty() ? fs::path(root_) : fs::path(root_) / base;
  std::vector<ObjectMeta> out;
  std::error_code error;
  if (!fs::is_directory(start, error)) {
    // Nothing under a missing folder; a file where the folder should be is damage the
    // caller has to hear of (a `_delta_log` that is a file is no missing table).
    if (!base.empty() && fs::is_regular_file(start, error)) {
      return MakeError(ErrorCode::kStorageError, arrow::StatusCode::IOError,
                       "cannot list ", start.string(), ": it is a file, not a folder")
          .WithDetail(std::make_shared<ErrorDetail>(ErrorCode::kStorageError, "ENOTDIR"));
    }
    return out;
  }
  fs::recursive_directory_iterator it(start, error), end;
  if (error) return StorageErrnoError("cannot list", start.string(), error.value());
  for (; it != end; it.increment(error)) {
    if (error) return StorageErrnoError("cannot list", start.string(), error.value());
    if (!it->is_regular_file(error)) continue;
    const std::string name = it->path().filename().string();
    if ((name.rfind(kTempMarker, 0) == 0) != staging) continue;
    const std::string& full = it->path().native();
    if (full.size() <= root_.size() + 1) continue;
    std::string key = full.substr(root_.size() + 1);
    if (key.compare(0, prefix.size(), prefix) != 0 || key <= start_after) continue;
    struct stat info {};
    if (::stat(it->path().c_str(), &info) != 0) continue;  // deleted while listing
    out.push_back(
        ObjectMeta{std::move(key), static_cast<int64_t>(info.st_size), MtimeMs(info)});
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectMeta& a, const ObjectMeta& b) { return a.path < b.path; });
  return out;
}

arrow::Result<std::vector<ObjectMeta>> LocalStore::List(const std::string& prefix,
                                                        const std::string& start_after) {
  return Walk(prefix, start_after, /*staging=*/false);
}

arrow::Result<std::vector<StagingObject>> LocalStore::ListStaging(
    const std::string& prefix) {
  ARROW_ASSIGN_OR_RAISE(auto found, Walk(prefix, "", /*staging=*/true));
  std::vector<StagingObject> out;
  for (auto& meta : found) {
    const std::string name = fs::path(meta.path).filename().string();
    out.push_back(StagingObject{std::move(meta.path), meta.size, meta.last_modified_ms,
                                TempOwner(name)});
  }
  return out;
}

arrow::Status LocalStore::Put(const std::string& path,
                              const std::shared_ptr<arrow::Buffer>& data, PutMode mode) {
  ARROW_ASSIGN_OR_RAISE(std::string full, FullPath(path));
  const std::string temp = TempPathFor(full);
  arrow::Status written = WriteSynced(full, temp, *data);
  if (!written.ok()) {
    ::unlink(temp.c_str());
    return written;
  }
  return Publish(temp, full, mode);
}

arrow::Status LocalStore::Delete(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string full, FullPath(path));
  if (::unlink(full.c_str()) != 0 && errno != ENOENT)
    return ErrnoError("delete", full, errno);
  return arrow::Status::OK();
}

void LocalStore::RemoveFolderIfEmpty(const std::string& path) {
  // rmdir(2) removes only an empty folder, atomically: a writer that creates a file in it
  // meanwhile either wins (the folder stays) or finds it gone and creates it again
  // (CreateStaged).
  if (!path.empty()) {
    auto full = FullPath(path);
    if (full.ok()) ::rmdir(full->c_str());
    return;
  }
  if (root_existed_ || ::rmdir(root_.c_str()) != 0) return;
  for (const auto& parent : missing_parents_) {
    if (::rmdir(parent.c_str()) != 0) return;
  }
}

arrow::Result<std::shared_ptr<arrow::io::OutputStream>> LocalStore::OpenOutputStream(
    const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string full, FullPath(path));
  ARROW_ASSIGN_OR_RAISE(auto stream, LocalOutputStream::Open(std::move(full)));
  return stream;
}

}  // namespace ampdelta::storage
