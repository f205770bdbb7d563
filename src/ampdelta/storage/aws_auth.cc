#include "ampdelta/storage/aws_auth.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "ampdelta/storage/cloud_io.h"
#include "ampdelta/storage/credentials.h"
#include "ampdelta/util/ascii.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/hex.h"
#include "ampdelta/util/sha256.h"
#include "ampdelta/util/status.h"

namespace ampdelta::storage {
namespace {

std::string Trim(const std::string& text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(start, end - start + 1);
}

std::string HmacRaw(std::string_view key, std::string_view message) {
  const auto mac = HmacSha256(key, message);
  return std::string(reinterpret_cast<const char*>(mac.data()), mac.size());
}

// Refresh temporary credentials this long before they expire.

std::string HomeFile(const char* relative) {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/" + relative;
}

// Read `[profile]` (or `[profile name]` in config files) key = value pairs from an INI
// file.
std::map<std::string, std::string> ReadProfile(const std::string& path,
                                               const std::string& profile) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      std::string name = Trim(line.substr(1, line.size() - 2));
      if (name.rfind("profile ", 0) == 0) name = Trim(name.substr(8));
      inside = name == profile;
      continue;
    }
    const size_t equals = line.find('=');
    if (inside && equals != std::string::npos) {
      values[AsciiLower(Trim(line.substr(0, equals)))] = Trim(line.substr(equals + 1));
    }
  }
  return values;
}

arrow::Status CredentialError(const std::string& source, const std::string& detail) {
  return MakeError(ErrorCode::kInvalidInput, arrow::StatusCode::IOError,
                   "could not get AWS credentials from ", source, ": ", detail);
}

arrow::Result<HttpResponse> SendOnce(HttpClient& client, const HttpRequest& request,
                                     const std::string& source) {
  ARROW_ASSIGN_OR_RAISE(auto sent, SendUnsigned(client, request));
  if (sent.response.status / 100 != 2) {
    return CredentialError(source, "HTTP " + std::to_string(sent.response.status) +
                                       " from " + request.DisplayUrl());
  }
  return std::move(sent.response);
}

// Temporary credentials whose expiry cannot be read are refreshed soon, not never.
int64_t ExpiryOf(const std::string& expiration) {
  const int64_t parsed = ParseHttpOrIsoTime(expiration);
  return parsed > 0 ? parsed : NowMs() + kCredentialRefreshMarginMs + 60 * 1000;
}

}  // namespace

void SignAwsV4(HttpRequest* request, const AwsCredentials& credentials,
               const std::string& region, const std::string& service,
               const std::string& payload_hash, int64_t now_seconds) {
  const std::time_t now = static_cast<std::time_t>(now_seconds);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  const std::string amz_date = stamp;
  const std::string date = amz_date.substr(0, 8);

  request->SetHeader("x-amz-date", amz_date);
  request->SetHeader("x-amz-content-sha256", payload_hash);
  if (!credentials.session_token.empty()) {
    request->SetHeader("x-amz-security-token", credentials.session_token);
  }
  const size_t scheme_end = request->origin.find("://");
  std::string host = scheme_end == std::string::npos
                         ? request->origin
                         : request->origin.substr(scheme_end + 3);
  // curl leaves default ports out of the Host header; so must the signature.
  if (host.size() > 4 && host.compare(host.size() - 4, 4, ":443") == 0 &&
      request->origin.rfind("https", 0) == 0) {
    host.resize(host.size() - 4);
  } else if (host.size() > 3 && host.compare(host.size() - 3, 3, ":80") == 0 &&
             request->origin.rfind("http:", 0) == 0) {
    host.resize(host.size() - 3);
  }

  std::vector<std::pair<std::string, std::string>> headers = {{"host", host}};
  for (const auto& [name, value] : request->headers)
    headers.emplace_back(AsciiLower(name), Trim(value));
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers;
  std::string signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [key, value] : request->query) {
    query.emplace_back(UriEncode(key, false), UriEncode(value, false));
  }
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [key, value] : query) {
    if (!canonical_query.empty()) canonical_query += '&';
    canonical_query += key + "=" + value;
  }
  const std::string canonical_request = request->method + "\n" + request->path + "\n" +
                                        canonical_query + "\n" + canonical_headers +
                                        "\n" + signed_headers + "\n" + payload_hash;
  const std::string scope = date + "/" + region + "/" + service + "/aws4_request";
  const std::string string_to_sign = "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope +
                                     "\n" + Sha256Hex(canonical_request);
  std::string key = HmacRaw("AWS4" + credentials.secret_access_key, date);
  key = HmacRaw(key, region);
  key = HmacRaw(key, service);
  key = HmacRaw(key, "aws4_request");
  const std::string signature = ToHex(HmacRaw(key, string_to_sign));
  request->SetHeader("Authorization",
                     "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" +
                         scope + ", SignedHeaders=" + signed_headers +
                         ", Signature=" + signature);
}

namespace {

// The first of a key and its older or shorter spelling that is set; "" when neither is.
std::string EitherOption(const std::map<std::string, std::string>& options,
                         const char* key, const char* alias) {
  std::string value = LookupOption(options, key).value_or("");
  return value.empty() ? LookupOption(options, alias).value_or("") : value;
}

// The STS endpoint web identity asks: the one given, else the region's.
std::string StsEndpoint(const std::map<std::string, std::string>& options) {
  if (auto sts = LookupOption(options, "AWS_ENDPOINT_URL_STS"); sts && !sts->empty()) {
    return *sts;
  }
  const std::string region = EitherOption(options, "AWS_REGION", "AWS_DEFAULT_REGION");
  return "https://sts." + (region.empty() ? std::string("us-east-1") : region) +
         ".amazonaws.com";
}

}  // namespace

arrow::Result<std::shared_ptr<AwsCredentialProvider>> AwsCredentialProvider::Make(
    const std::map<std::string, std::string>& options,
    std::shared_ptr<HttpClient> client) {
  auto provider = std::make_shared<AwsCredentialProvider>();
  provider->client_ = std::move(client);
  auto get = [&](const char* key) { return LookupOption(options, key).value_or(""); };
  auto either = [&](const char* key, const char* alias) {
    return EitherOption(options, key, alias);
  };
  auto& settings = provider->settings_;

  const std::string key_id = get("AWS_ACCESS_KEY_ID");
  const std::string secret = get("AWS_SECRET_ACCESS_KEY");
  if (!key_id.empty() || !secret.empty()) {
    if (key_id.empty() || secret.empty()) {
      return InvalidInputError(
          key_id.empty() ? "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not"
                         : "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    }
    provider->kind_ = Kind::kStatic;
    provider->source_ = "static keys";
    provider->cached_ =
        AwsCredentials{key_id, secret, either("AWS_SESSION_TOKEN", "AWS_TOKEN"), 0};
    provider->have_cached_ = true;
    return provider;
  }
  const std::string token_file = get("AWS_WEB_IDENTITY_TOKEN_FILE");
  const std::string role = get("AWS_ROLE_ARN");
  if (!token_file.empty() && !role.empty()) {
    provider->kind_ = Kind::kWebIdentity;
    provider->source_ = "web identity (" + role + ")";
    settings["token_file"] = token_file;
    settings["role"] = role;
    settings["session"] = get("AWS_ROLE_SESSION_NAME");
    if (settings["session"].empty()) settings["session"] = "ampdelta";
    settings["sts"] = StsEndpoint(options);
    return provider;
  }
  const std::string profile = either("AWS_PROFILE", "AWS_DEFAULT_PROFILE");
  std::string file = get("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty()) file = HomeFile(".aws/credentials");
  std::string config = get("AWS_CONFIG_FILE");
  if (config.empty()) config = HomeFile(".aws/config");
  const std::string profile_name = profile.empty() ? "default" : profile;
  auto values = ReadProfile(file, profile_name);
  if (values.count("aws_access_key_id") == 0) values = ReadProfile(config, profile_name);
  if (values.count("aws_access_key_id") && values.count("aws_secret_access_key")) {
    provider->kind_ = Kind::kProfile;
    provider->source_ = "profile " + profile_name;
    provider->cached_ =
        AwsCredentials{values["aws_access_key_id"], values["aws_secret_access_key"],
                       values["aws_session_token"], 0};
    provider->have_cached_ = true;
    return provider;
  }
  if (!profile.empty()) {
    return InvalidInputError("AWS profile '", profile,
                             "' has no aws_access_key_id/aws_secret_access_key in ", file,
                             " or ", config);
  }
  if (AsciiLower(get("AWS_EC2_METADATA_DISABLED")) != "true") {
    provider->kind_ = Kind::kInstanceMetadata;
    provider->source_ = "instance metadata";
    std::string endpoint = get("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    settings["imds"] = endpoint.empty() ? "http://169.254.169.254" : endpoint;
    // Off EC2 nothing answers there: give up fast rather than after the store's timeouts.
    provider->client_ = std::make_shared<HttpClient>(std::chrono::milliseconds(1000),
                                                     std::chrono::milliseconds(5000));
    return provider;
  }
  return InvalidInputError(
      "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a "
      "profile (AWS_PROFILE), or web identity (AWS_WEB_IDENTITY_TOKEN_FILE, "
      "AWS_ROLE_ARN)");
}

arrow::Result<AwsCredentials> AwsCredentialProvider::Get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (have_cached_ && (cached_.expires_at_ms == 0 ||
                       cached_.expires_at_ms - NowMs() > kCredentialRefreshMarginMs)) {
    return cached_;
  }
  ARROW_ASSIGN_OR_RAISE(cached_, Fetch());
  have_cached_ = true;
  return cached_;
}

arrow::Result<AwsCredentials> AwsCredentialProvider::Fetch() {
  if (kind_ == Kind::kWebIdentity) {
    std::ifstream in(settings_["token_file"]);
    if (!in) return CredentialError(source_, "cannot read " + settings_["token_file"]);
    std::stringstream token;
    token << in.rdbuf();
    // The token goes in a form body, not the URL (which proxies and servers log).
    HttpRequest request = HttpRequest::FromUrl("POST", settings_["sts"]);
    request.body =
        arrow::Buffer::FromString(FormEncode({{"Action", "AssumeRoleWithWebIdentity"},
                                              {"Version", "2011-06-15"},
                                              {"RoleArn", settings_["role"]},
                                              {"RoleSessionName", settings_["session"]},
                                              {"WebIdentityToken", Trim(token.str())}}));
    request.SetHeader("Content-Type", "application/x-www-form-urlencoded");
    ARROW_ASSIGN_OR_RAISE(auto response, SendOnce(*client_, request, source_));
    pugi::xml_document doc;
    doc.load_string(response.body.c_str());
    auto creds = doc.select_node("//Credentials").node();
    if (!creds) return CredentialError(source_, "STS reply has no Credentials");
    return AwsCredentials{
        creds.child_value("AccessKeyId"), creds.child_value("SecretAccessKey"),
        creds.child_value("SessionToken"), ExpiryOf(creds.child_value("Expiration"))};
  }
  if (kind_ == Kind::kInstanceMetadata) {
    HttpRequest token_request = HttpRequest::FromUrl("PUT", settings_["imds"]);
    token_request.path = "/latest/api/token";
    token_request.SetHeader("X-aws-ec2-metadata-token-ttl-seconds", "21600");
    ARROW_ASSIGN_OR_RAISE(auto token, SendOnce(*client_, token_request, source_));
    HttpRequest role_request;
    role_request.origin = token_request.origin;
    role_request.path = "/latest/meta-data/iam/security-credentials/";
    role_request.SetHeader("X-aws-ec2-metadata-token", token.body);
    ARROW_ASSIGN_OR_RAISE(auto role, SendOnce(*client_, role_request, source_));
    const std::string role_name = Trim(role.body.substr(0, role.body.find('\n')));
    if (role_name.empty())
      return CredentialError(source_, "the instance has no IAM role");
    role_request.path += UriEncode(role_name, false);
    ARROW_ASSIGN_OR_RAISE(auto creds, SendOnce(*client_, role_request, source_));
    auto json = nlohmann::json::parse(creds.body, nullptr, false);
    auto field = [&json](const char* key) -> std::string {
      auto it = json.is_object() ? json.find(key) : json.end();
      return json.is_object() && it != json.end() && it->is_string()
                 ? it->get<std::string>()
                 : "";
    };
    if (field("AccessKeyId").empty() || field("SecretAccessKey").empty()) {
      return CredentialError(source_, "malformed credentials document");
    }
    return AwsCredentials{field("AccessKeyId"), field("SecretAccessKey"), field("Token"),
                          ExpiryOf(field("Expiration"))};
  }
  return cached_;
}

}  // namespace ampdelta::storage
