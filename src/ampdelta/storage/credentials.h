#pragma once

/// \file credentials.h
/// \brief Which cloud credentials a table URL needs, looked up as the seed's loader does:
/// in `storage_options` first, then in environment variables of the same names.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>

namespace ampdelta::storage {

/// Short-lived credentials (STS, instance metadata, OAuth tokens) are renewed this long
/// before they expire.
inline constexpr int64_t kCredentialRefreshMarginMs = 5 * 60 * 1000;

/// \brief Return `key` from `options` (any letter case), else from the environment, else
/// nullopt.
std::optional<std::string> LookupOption(const std::map<std::string, std::string>& options,
                                        const std::string& key);

/// \brief Return the credential keys a store at `uri` needs but neither `options` nor the
/// environment has (empty for local paths and when credentials are complete).
///
/// S3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; Azure AZURE_STORAGE_ACCOUNT_NAME
/// and AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_TOKEN instead of the key); GCS
/// GOOGLE_SERVICE_ACCOUNT (or GOOGLE_APPLICATION_CREDENTIALS).
std::vector<std::string> MissingCredentials(
    const std::string& uri, const std::map<std::string, std::string>& options);

/// \brief Return the seed's warning for missing credentials, e.g.
/// `Missing S3 credentials: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']`, or "" when
/// nothing is missing.
std::string MissingCredentialsWarning(const std::string& uri,
                                      const std::map<std::string, std::string>& options);

/// \brief Return a boolean option: true for `true`/`1`/`yes` (any case), `fallback` when
/// unset; other values are an error naming the key.
arrow::Result<bool> LookupFlag(const std::map<std::string, std::string>& options,
                               const std::string& key, bool fallback = false);

/// \brief Return whether a plain-HTTP endpoint is allowed: `store_key` (`AWS_ALLOW_HTTP`,
/// …), else deltalake's unprefixed `allow_http`, else `fallback`.
arrow::Result<bool> LookupAllowHttp(const std::map<std::string, std::string>& options,
                                    const std::string& store_key, bool fallback = false);

}  // namespace ampdelta::storage
