#pragma once

/// \file redact.h
/// \brief Keep credentials in URL user-info (`grpc://user:password@host`,
/// `s3://KEY:SECRET@bucket`) out of messages, result lines and logs.

#include <string>
#include <string_view>

namespace ampdelta {

namespace internal {

/// Where a URL's user-info is: [begin, end) of `user[:password]` before the authority's
/// last '@', or begin == end when there is none.
struct UserInfoSpan {
  size_t begin = 0;
  size_t end = 0;
};

inline UserInfoSpan FindUserInfo(std::string_view url) {
  const size_t scheme_end = url.find("://");
  // Without a scheme (`user:pw@host:1602`, a mistyped URL), the authority starts the
  // text.
  const size_t begin = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  size_t authority_end = url.find_first_of("/?#", begin);
  if (authority_end == std::string_view::npos) authority_end = url.size();
  const size_t at = url.substr(begin, authority_end - begin).rfind('@');
  if (at == std::string_view::npos) return {};
  std::string_view scheme = scheme_end == std::string_view::npos
                                ? std::string_view()
                                : url.substr(0, scheme_end);
  std::string_view user_info = url.substr(begin, at);
  // ADLS Gen2 names the container as abfs[s]://container@account...: not a secret unless
  // a password follows it.
  if ((scheme == "abfs" || scheme == "abfss") &&
      user_info.find(':') == std::string_view::npos) {
    return {};
  }
  return {begin, begin + at};
}

}  // namespace internal

/// \brief Return true when `url` carries user-info that RedactUrl would hide.
inline bool UrlHasUserInfo(std::string_view url) {
  const internal::UserInfoSpan span = internal::FindUserInfo(url);
  return span.end > span.begin;
}

/// \brief Return `url` with its user-info replaced by `***`
/// (`grpc://alice:pw@host:1602` → `grpc://***@host:1602`); other text is returned as is.
inline std::string RedactUrl(std::string_view url) {
  const internal::UserInfoSpan span = internal::FindUserInfo(url);
  if (span.end <= span.begin) return std::string(url);
  std::string out(url.substr(0, span.begin));
  out += "***";
  out += url.substr(span.end);
  return out;
}

/// \brief Return `text` with every occurrence of `url` replaced by RedactUrl(url), and
/// of its bare user-info too (messages from other libraries may quote either).
inline std::string RedactUrlIn(std::string_view text, std::string_view url) {
  const internal::UserInfoSpan span = internal::FindUserInfo(url);
  std::string out(text);
  if (span.end <= span.begin) return out;
  auto replace_all = [&out](std::string_view from, std::string_view to) {
    if (from.empty()) return;
    for (size_t at = out.find(from); at != std::string::npos;
         at = out.find(from, at + to.size())) {
      out.replace(at, from.size(), to);
    }
  };
  replace_all(url, RedactUrl(url));
  replace_all(url.substr(span.begin, span.end - span.begin), "***");
  return out;
}

}  // namespace ampdelta
