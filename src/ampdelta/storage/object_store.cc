#include "ampdelta/storage/object_store.h"

#include <filesystem>
#include <set>

#include <arrow/util/uri.h>

namespace ampdelta::storage {

arrow::Status ObjectStore::DeleteMany(const std::vector<std::string>& paths) {
  arrow::Status first;
  for (const auto& path : paths) {
    arrow::Status status = Delete(path);
    if (!status.ok() && first.ok()) first = status;
  }
  return first;
}

arrow::Status ObjectStore::DeleteWithFolders(const std::vector<std::string>& paths,
                                             const std::vector<std::string>& folders) {
  arrow::Status deleted = DeleteMany(paths);
  std::set<std::string> parents;
  for (const auto* keys : {&paths, &folders}) {
    for (const auto& key : *keys) {
      for (size_t slash = key.rfind('/'); slash != std::string::npos && slash > 0;
           slash = key.rfind('/', slash - 1)) {
        parents.insert(key.substr(0, slash));
      }
    }
  }
  // Deepest first: a folder is empty only once the folders in it are gone.
  for (auto it = parents.rbegin(); it != parents.rend(); ++it) RemoveFolderIfEmpty(*it);
  return deleted;
}

arrow::Result<std::vector<StagingObject>> ObjectStore::ListStaging(const std::string&) {
  return std::vector<StagingObject>();
}

std::optional<std::string> ObjectStore::KeyOf(const std::string& location) const {
  const std::string root = root_uri();
  const std::string prefix = root.empty() || root.back() == '/' ? root : root + "/";
  if (prefix.empty() || location.size() <= prefix.size() ||
      location.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  // Only a normal relative key, so that a location can never name an object outside
  // the root.
  const std::string key = arrow::util::UriUnescape(location.substr(prefix.size()));
  auto inside = RelativePathUnder("/", "/" + key);
  if (inside && *inside == key) return key;
  return std::nullopt;
}

std::optional<std::string> RelativePathUnder(const std::string& root,
                                             const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path base = fs::path(root).lexically_normal();
  const fs::path target = fs::path(path).lexically_normal();
  if (!base.is_absolute() || !target.is_absolute()) return std::nullopt;
  const fs::path relative = target.lexically_relative(base);
  if (relative.empty() || relative == ".") return std::nullopt;
  for (const auto& part : relative) {
    if (part == "..") return std::nullopt;
  }
  return relative.generic_string();
}

std::string JoinPath(std::string_view base, std::string_view child) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  while (!child.empty() && child.front() == '/') child.remove_prefix(1);
  if (base.empty()) return std::string(child);
  if (child.empty()) return std::string(base);
  return std::string(base) + "/" + std::string(child);
}

}  // namespace ampdelta::storage
