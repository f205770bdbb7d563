#pragma once

/// \file action_json_internal.h
/// \brief Action parsing from an already-decoded JSON value (not installed: exposes
/// nlohmann::json). Checkpoint rows use it to share the commit-line parser.

#include <string>

#include <arrow/result.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta::internal {

/// \brief Parse the body of action `name` ("add", "metaData", …).
/// \return KeyError for an unknown action name (callers skip those)
arrow::Result<Action> ActionFromJson(const std::string& name, const nlohmann::json& body,
                                     const std::string& source);

}  // namespace ampdelta::delta::internal
