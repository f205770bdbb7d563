#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

Remove RemoveFor(const Add& add, bool data_change) {
  Remove remove;
  remove.path = add.path;
  remove.data_change = data_change;
  remove.extended_file_metadata = true;
  remove.partition_values = add.partition_values;
  remove.size = add.size;
  remove.stats = add.stats;
  remove.deletion_vector = add.deletion_vector;
  // The tags say what the file held (a stream's block ranges): a concurrent writer that
  // sees the remove can tell whose progress it takes back.
  remove.tags = add.tags;
  // PROTOCOL.md "Row Tracking": a remove names the row IDs its add gave.
  remove.base_row_id = add.base_row_id;
  remove.default_row_commit_version = add.default_row_commit_version;
  return remove;
}

std::string DeletionVectorDescriptor::UniqueId() const {
  std::string id = storage_type + path_or_inline_dv;
  if (offset) id += "@" + std::to_string(*offset);
  return id;
}

}  // namespace ampdelta::delta
