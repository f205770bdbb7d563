#pragma once

/// \file query_text.h
/// \brief Small, careful edits of SQL text that a client must make.

#include <string>
#include <string_view>

namespace ampdelta::amp {

/// \brief Return true when the top-level query ends with `SETTINGS … stream = true …`
/// (case-insensitive, ignoring a trailing `;` and whitespace).
bool HasStreamSetting(std::string_view sql);

/// \brief Return `sql` with ` SETTINGS stream = true` appended unless it already streams.
/// Unlike the Python SDK, the clause is never added twice.
std::string EnsureStreamingQuery(std::string_view sql);

}  // namespace ampdelta::amp
