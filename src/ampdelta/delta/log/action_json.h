#pragma once

/// \file action_json.h
/// \brief JSON encoding of Delta actions: one `{"<action>": {...}}` object per line.

#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief Parse one log line. Unknown action types are skipped (forward compatibility):
/// the result is then std::nullopt.
arrow::Result<std::optional<Action>> ParseActionLine(std::string_view line);

/// \brief Parse a whole commit file (newline-delimited JSON; blank lines ignored).
/// \param[in] source named in errors (e.g. the commit's path)
arrow::Result<std::vector<Action>> ParseCommit(std::string_view text,
                                               const std::string& source);

/// \brief Encode one action as a single JSON line (no trailing newline). Optional fields
/// that are unset are omitted.
/// \return ErrorCode::kInvalidInput naming the field when a string of the action (a path,
///   partition value, tag, …) is not UTF-8, which JSON cannot carry
arrow::Result<std::string> ActionToJson(const Action& action);

/// \brief Encode actions as a commit file: one line each, newline-terminated.
/// \return ErrorCode::kInvalidInput as ActionToJson
arrow::Result<std::string> EncodeCommit(const std::vector<Action>& actions);

/// \brief Return the action's key in the log ("add", "metaData", …).
const char* ActionName(const Action& action);

}  // namespace ampdelta::delta
