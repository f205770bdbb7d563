#include "ampdelta/storage/location.h"

#include <cctype>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/percent_encoding.h"

namespace ampdelta::storage {

std::string CanonicalLocation(const std::string& location) {
  if (UriScheme(location) != "file") return location;
  std::string path = PercentDecode(location.substr(5));
  while (path.rfind("//", 0) == 0) path.erase(0, 1);
  return path;
}

std::string UriScheme(const std::string& uri) {
  const size_t colon = uri.find("://");
  if (colon == std::string::npos || colon == 0) {
    // "file:/abs" (one slash) is what Spark writes.
    if (uri.rfind("file:", 0) == 0) return "file";
    return "";
  }
  std::string scheme = uri.substr(0, colon);
  for (char& c : scheme) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' &&
        c != '.') {
      return "";
    }
  }
  return AsciiLower(scheme);
}

}  // namespace ampdelta::storage
