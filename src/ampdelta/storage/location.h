#pragma once

/// \file location.h
/// \brief How a table location is spelled: its URI scheme and its canonical form.

#include <string>

namespace ampdelta::storage {

/// \brief Return the URI scheme of `uri` in lower case, or "" for a plain path.
std::string UriScheme(const std::string& uri);

/// \brief Return `location` canonical: a `file:` URI as the decoded absolute path it
/// names (a log may spell one file either way: `file:/a%20b`, `/a b`); anything else as
/// it is.
std::string CanonicalLocation(const std::string& location);

}  // namespace ampdelta::storage
