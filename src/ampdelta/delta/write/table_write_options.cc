#include "ampdelta/delta/write/table_write_options.h"

#include "ampdelta/util/status.h"

namespace ampdelta::delta {

arrow::Result<SaveMode> ParseSaveMode(const std::string& mode) {
  if (mode == "append") return SaveMode::kAppend;
  if (mode == "overwrite") return SaveMode::kOverwrite;
  if (mode == "error" || mode == "errorifexists") return SaveMode::kErrorIfExists;
  if (mode == "ignore") return SaveMode::kIgnore;
  return InvalidInputError("Invalid save mode provided: ", mode,
                           " (use append, overwrite, error or ignore)");
}

}  // namespace ampdelta::delta
