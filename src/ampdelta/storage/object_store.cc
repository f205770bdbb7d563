#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

arrow::Status ObjectStore::DeleteMany(const std::vector<std::string>& paths) {
  arrow::Status first;
  for (const auto& path : paths) {
    arrow::Status status = Delete(path);
    if (!status.ok() && first.ok()) first = status;
  }
  return first;
}

arrow::Result<std::vector<StagingObject>> ObjectStore::ListStaging(const std::string&) {
  return std::vector<StagingObject>();
}

std::string JoinPath(std::string_view base, std::string_view child) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  while (!child.empty() && child.front() == '/') child.remove_prefix(1);
  if (base.empty()) return std::string(child);
  if (child.empty()) return std::string(base);
  return std::string(base) + "/" + std::string(child);
}

}  // namespace ampdelta::storage
