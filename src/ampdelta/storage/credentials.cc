#include "ampdelta/storage/credentials.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "ampdelta/storage/location.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

// The store family a scheme belongs to, as the warning names it.
std::string Family(const std::string& scheme) {
  if (scheme == "s3" || scheme == "s3a") return "S3";
  if (scheme == "az" || scheme == "abfs" || scheme == "abfss" || scheme == "adl" ||
      scheme == "azure") {
    return "Azure";
  }
  if (scheme == "gs" || scheme == "gcs") return "GCS";
  return "";
}

}  // namespace

std::optional<std::string> LookupOption(const std::map<std::string, std::string>& options,
                                        const std::string& key) {
  auto it = options.find(key);
  if (it != options.end() && !it->second.empty()) return it->second;
  // deltalake users also write the keys in lower case (`aws_region`).
  for (const auto& [name, value] : options) {
    if (!value.empty() && EqualsIgnoreAsciiCase(name, key)) {
      return value;
    }
  }
  const char* env = std::getenv(key.c_str());
  if (env != nullptr && *env != '\0') return std::string(env);
  return std::nullopt;
}

arrow::Result<bool> LookupFlag(const std::map<std::string, std::string>& options,
                               const std::string& key, bool fallback) {
  auto value = LookupOption(options, key);
  if (!value) return fallback;
  const std::string lower = AsciiLower(*value);
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  return InvalidInputError("storage option ", key, " must be true or false, not '",
                           *value, "'");
}

arrow::Result<bool> LookupAllowHttp(const std::map<std::string, std::string>& options,
                                    const std::string& store_key, bool fallback) {
  ARROW_ASSIGN_OR_RAISE(bool generic, LookupFlag(options, "ALLOW_HTTP", fallback));
  return LookupFlag(options, store_key, generic);
}

std::vector<std::string> MissingCredentials(
    const std::string& uri, const std::map<std::string, std::string>& options) {
  const std::string family = Family(UriScheme(uri));
  std::vector<std::string> missing;
  auto require = [&](const std::string& key) {
    if (!LookupOption(options, key)) missing.push_back(key);
  };
  if (family == "S3") {
    require("AWS_ACCESS_KEY_ID");
    require("AWS_SECRET_ACCESS_KEY");
  } else if (family == "Azure") {
    require("AZURE_STORAGE_ACCOUNT_NAME");
    if (!LookupOption(options, "AZURE_STORAGE_SAS_TOKEN"))
      require("AZURE_STORAGE_ACCOUNT_KEY");
  } else if (family == "GCS") {
    if (!LookupOption(options, "GOOGLE_APPLICATION_CREDENTIALS"))
      require("GOOGLE_SERVICE_ACCOUNT");
  }
  return missing;
}

std::string MissingCredentialsWarning(const std::string& uri,
                                      const std::map<std::string, std::string>& options) {
  const auto missing = MissingCredentials(uri, options);
  if (missing.empty()) return "";
  std::string list = "[";
  for (size_t i = 0; i < missing.size(); ++i)
    list += (i ? ", '" : "'") + missing[i] + "'";
  return "Missing " + Family(UriScheme(uri)) + " credentials: " + list + "]";
}

}  // namespace ampdelta::storage
