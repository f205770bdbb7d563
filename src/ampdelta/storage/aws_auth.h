#pragma once

/// \file aws_auth.h
/// \brief AWS Signature Version 4 and the credential sources the S3 store supports.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/storage/http_client.h"

namespace ampdelta::storage {

/// \brief One set of AWS credentials.
struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  /// Temporary credentials carry a session token.
  std::string session_token;
  /// When temporary credentials expire (ms since the epoch); 0 for never.
  int64_t expires_at_ms = 0;
};

/// \brief The payload hash SigV4 uses when the body is not hashed.
inline constexpr const char* kUnsignedPayload = "UNSIGNED-PAYLOAD";

/// \brief Sign `request` in place with SigV4: adds `x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token` (temporary credentials) and `Authorization`. Every header
/// already on the request is signed, as is `host`.
///
/// \param[in] payload_hash hex SHA-256 of the body, or kUnsignedPayload
/// \param[in] now_seconds the signing time (seconds since the epoch)
void SignAwsV4(HttpRequest* request, const AwsCredentials& credentials,
               const std::string& region, const std::string& service,
               const std::string& payload_hash, int64_t now_seconds);

/// \brief Supplies current credentials, refreshing temporary ones before they expire.
/// Thread-safe.
class AwsCredentialProvider {
 public:
  /// \brief Pick the first source that is configured, in this order: static keys
  /// (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN), web identity
  /// (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, via STS), a shared credentials file
  /// profile (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), then
  /// the EC2 instance metadata service (IMDSv2) unless AWS_EC2_METADATA_DISABLED=true.
  /// Keys are looked up in `options`, then the environment.
  static arrow::Result<std::shared_ptr<AwsCredentialProvider>> Make(
      const std::map<std::string, std::string>& options,
      std::shared_ptr<HttpClient> client);

  /// \brief Return credentials valid for at least a few more minutes.
  arrow::Result<AwsCredentials> Get();

  /// \brief Return where the credentials come from ("static keys", "profile default", …).
  const std::string& source() const { return source_; }

 private:
  enum class Kind : uint8_t { kStatic, kWebIdentity, kProfile, kInstanceMetadata };

  arrow::Result<AwsCredentials> Fetch();

  Kind kind_ = Kind::kStatic;
  std::string source_;
  std::map<std::string, std::string> settings_;
  std::shared_ptr<HttpClient> client_;
  std::mutex mutex_;
  AwsCredentials cached_;
  bool have_cached_ = false;
};

}  // namespace ampdelta::storage
