#include "ampdelta/storage/object_store_registry.h"

#include <algorithm>
#include <mutex>

#include "ampdelta/storage/azure_store.h"
#include "ampdelta/storage/gcs_store.h"
#include "ampdelta/storage/http_client.h"
#include "ampdelta/storage/local_store.h"
#include "ampdelta/storage/location.h"
#include "ampdelta/storage/memory_store.h"
#include "ampdelta/storage/s3_store.h"
#include "ampdelta/util/redact.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

std::shared_ptr<ObjectStore> SharedMemoryStore(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<MemoryStore>> stores;
  std::lock_guard<std::mutex> lock(mutex);
  auto& store = stores[name];
  if (store == nullptr) store = std::make_shared<MemoryStore>(name);
  return store;
}

}  // namespace

arrow::Result<std::shared_ptr<ObjectStore>> OpenObjectStore(
    const std::string& uri, const std::map<std::string, std::string>& options) {
  // No file system or object store names a path with a NUL; a C API would cut it there
  // and write somewhere else.
  if (const size_t nul = uri.find('\0'); nul != std::string::npos) {
    return InvalidInputError("table path '", RedactUrl(uri.substr(0, nul)),
                             "\\0…' contains a NUL byte");
  }
  // A table inside another table's log would put data files among commit files.
  size_t begin = 0;
  while (begin <= uri.size()) {
    const size_t end = std::min(uri.find('/', begin), uri.size());
    if (uri.compare(begin, end - begin, "_delta_log") == 0) {
      return InvalidInputError("table path '", RedactUrl(uri),
                               "' lies inside a table's _delta_log folder");
    }
    begin = end + 1;
  }
  const std::string scheme = UriScheme(uri);
  if (scheme.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto store, LocalStore::Make(uri));
    return store;
  }
  if (UrlHasUserInfo(uri)) {
    // A password in the URL would end up in every message and log line that names the
    // table.
    return InvalidInputError(
        "table URL '", RedactUrl(uri),
        "' carries credentials in its user-info: pass them as storage options "
        "(--storage-option or storage_options) instead");
  }
  if (scheme == "file") {
    std::string path = uri.substr(uri.find(':') + 1);
    if (path.size() > 2 && path.rfind("//", 0) == 0 && path[2] != '/') {
      // file://host/path: only this machine's files are reachable.
      const std::string host = path.substr(2, path.find('/', 2) - 2);
      if (host != "localhost") {
        return InvalidInputError("table URL '", uri, "' names host '", host,
                                 "': file:// URLs must name a local path (file:///path)");
      }
    }
    // file:///abs, file://localhost/abs and file:/abs all name /abs.
    if (path.rfind("//localhost/", 0) == 0) path = path.substr(11);
    while (path.rfind("//", 0) == 0) path = path.substr(1);
    const std::string decoded = UriDecode(path);
    if (decoded.find('\0') != std::string::npos) {
      return InvalidInputError("table URL '", RedactUrl(uri),
                               "' names a path with a NUL byte");
    }
    ARROW_ASSIGN_OR_RAISE(auto store, LocalStore::Make(decoded));
    return store;
  }
  if (scheme == "memory") return SharedMemoryStore(uri.substr(9));
  if (scheme == "s3" || scheme == "s3a") {
    ARROW_ASSIGN_OR_RAISE(auto store, S3Store::Make(uri, options));
    return store;
  }
  if (scheme == "az" || scheme == "abfs" || scheme == "abfss" || scheme == "azure") {
    ARROW_ASSIGN_OR_RAISE(auto store, AzureStore::Make(uri, options));
    return store;
  }
  if (scheme == "gs" || scheme == "gcs") {
    ARROW_ASSIGN_OR_RAISE(auto store, GcsStore::Make(uri, options));
    return store;
  }
  return InvalidInputError("unsupported table location scheme '", scheme, "://' in '",
                           RedactUrl(uri), "'");
}

}  // namespace ampdelta::storage
