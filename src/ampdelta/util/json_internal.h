#pragma once

/// \file json_internal.h
/// \brief nlohmann::json at the library's seams without exceptions (not installed: it
/// exposes nlohmann::json).
///
/// nlohmann throws from `dump()` on a string that is not UTF-8, from `value()` and
/// `get<>()` on a wrongly typed value, and its serialiser and copies recurse once per
/// nesting level. Hostile text is therefore parsed with ParseJson (bounded depth, never
/// throws), written with DumpJson (UTF-8 checked first) or DumpJsonLossy (informational
/// text), and optional members are read with the typed helpers below.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/result.h>
#include <nlohmann/json.hpp>

#include "ampdelta/util/status.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::json_util {

/// Deepest array/object nesting accepted: Jackson's default limit (so Spark's), far
/// beyond any Delta action, schema or Amp metadata, and shallow enough that nlohmann's
/// recursive dump and copy, and our recursive schema walk, stay within the stack.
inline constexpr int kMaxJsonDepth = 1000;

/// \brief Return true when the arrays and objects of `text` nest at most `max_depth`
/// deep. Brackets inside strings do not count; malformed text is left to the parser.
inline bool JsonNestingWithin(std::string_view text, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

/// \brief Parse JSON text without throwing. The result is discarded (`is_discarded()`)
/// when the text is not JSON, holds bytes that are not UTF-8 (nlohmann's lexer rejects
/// them), or nests deeper than kMaxJsonDepth.
template <typename Json = nlohmann::json>
Json ParseJson(std::string_view text) {
  if (!JsonNestingWithin(text)) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

/// \brief Return true when every string and object key in `value` is UTF-8, i.e. when
/// `dump()` cannot throw.
template <typename Json>
bool AllStringsUtf8(const Json& value) {
  // Iterative: values built from Arrow data nest as deep as their type does.
  std::vector<const Json*> pending = {&value};
  while (!pending.empty()) {
    const Json* node = pending.back();
    pending.pop_back();
    if (node->is_string()) {
      if (!IsValidUtf8(node->template get_ref<const typename Json::string_t&>())) {
        return false;
      }
    } else if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) {
        if (!IsValidUtf8(it.key())) return false;
        pending.push_back(&*it);
      }
    } else if (node->is_array()) {
      for (const auto& item : *node) pending.push_back(&item);
    }
  }
  return true;
}

/// \brief Return the place of the first string or key in `value` that is not UTF-8, as
/// a path like `add.partitionValues.x` (bad bytes shown as `\xNN`); nullopt when there
/// is none.
template <typename Json>
std::optional<std::string> FindNonUtf8(const Json& value) {
  std::vector<std::pair<const Json*, std::string>> pending = {{&value, ""}};
  while (!pending.empty()) {
    auto [node, path] = std::move(pending.back());
    pending.pop_back();
    if (node->is_string()) {
      if (!IsValidUtf8(node->template get_ref<const typename Json::string_t&>())) {
        return path.empty() ? std::string("the top-level string") : path;
      }
    } else if (node->is_object()) {
      for (auto it = node->begin(); it != node->end(); ++it) {
        const std::string name =
            (path.empty() ? "" : path + ".") + EscapeNonUtf8(it.key());
        if (!IsValidUtf8(it.key())) return "the key " + name;
        pending.emplace_back(&*it, name);
      }
    } else if (node->is_array()) {
      for (size_t i = 0; i < node->size(); ++i) {
        pending.emplace_back(&(*node)[i], path + "[" + std::to_string(i) + "]");
      }
    }
  }
  return std::nullopt;
}

/// \brief Serialise `value` compactly.
/// \param[in] what names the value in the error, e.g. "add action"
/// \return ErrorCode::kInvalidInput naming the place of a string that is not UTF-8
///   (which JSON cannot carry and nlohmann's dump() would throw on)
template <typename Json>
arrow::Result<std::string> DumpJson(const Json& value, std::string_view what) {
  if (!AllStringsUtf8(value)) {
    return InvalidInputError(what, " is not valid UTF-8 at ",
                             FindNonUtf8(value).value_or("an unknown place"));
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// \brief Serialise `value` compactly, with bytes that are not UTF-8 replaced by U+FFFD.
/// Never throws. For messages and informational text only, never for values a reader
/// acts on (paths, statistics, partition values).
template <typename Json>
std::string DumpJsonLossy(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// \brief Return member `key` of `object` when it is a boolean, `fallback` when it is
/// absent or null, and nullopt when it has another type (or `object` is no object).
template <typename Json>
std::optional<bool> BoolOr(const Json& object, const char* key, bool fallback) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return std::nullopt;
  return it->template get<bool>();
}

/// \brief Return `value` as an int64 when it is an integer in range (nlohmann converts
/// an unsigned above INT64_MAX to a negative number silently); nullopt otherwise.
template <typename Json>
std::optional<int64_t> AsInt64(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto number = value.template get<uint64_t>();
    if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(number);
  }
  if (value.is_number_integer()) return value.template get<int64_t>();
  return std::nullopt;
}

/// \brief Return `value` as a uint64 when it is a non-negative integer; nullopt
/// otherwise.
template <typename Json>
std::optional<uint64_t> AsUint64(const Json& value) {
  if (value.is_number_unsigned()) return value.template get<uint64_t>();
  if (value.is_number_integer()) {
    const auto number = value.template get<int64_t>();
    if (number < 0) return std::nullopt;
    return static_cast<uint64_t>(number);
  }
  return std::nullopt;
}

}  // namespace ampdelta::json_util
