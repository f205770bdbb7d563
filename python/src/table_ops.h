#pragma once

/// \file table_ops.h
/// \brief Table maintenance for Python's `ampdelta.Table`: the engine calls of
/// `ampdelta table …`, answering in JSON.

#include <string>

#include <arrow/result.h>

namespace ampdelta::python {

/// \brief Run `operation` (version, history, optimize, vacuum, delete, restore,
/// checkpoint) with `args_json` on the table at `path` and return its outcome as a JSON
/// object (history: an array).
arrow::Result<std::string> RunTableOperation(const std::string& path,
                                             const std::string& storage_options_json,
                                             const std::string& operation,
                                             const std::string& args_json);

}  // namespace ampdelta::python
