#pragma once

/// \file events.h
/// \brief What the extension hands to Python, as JSON text: load results and errors
/// (python/ampdelta/_results.py turns them into LoadResult objects and exceptions).

#include <string>

#include <arrow/status.h>

#include "ampdelta/loader/common/load_result.h"

namespace ampdelta::python {

/// \brief `{"kind": kind, "result": {…every LoadResult field…}}`.
std::string EventJson(const char* kind, const loader::LoadResult& result);

/// \brief `{"code": "server_error", "class": "server", "message": …}`; "internal" for an
/// unclassified error.
std::string ErrorJson(const arrow::Status& status);

}  // namespace ampdelta::python
