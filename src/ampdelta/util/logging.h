#pragma once

/// \file logging.h
/// \brief A small logging facade: levels, a replaceable sink, and macros that skip
/// formatting when the level is off.
///
/// The library never writes to stdout. By default records go to stderr, as text
/// (`[ampdelta info] commit version=12 rows=100`) or as one JSON object per line
/// (SetFormat); the CLI may install another sink. The events operators follow (connect,
/// commit, reorg, retry, compaction, checkpoint, stop) are logged with Event() and named
/// fields; other messages are short `what key=value …` lines. Nothing logged may hold a
/// secret: URLs are redacted before they are logged.

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ampdelta::log {

/// \brief Severity of a log message, in increasing order.
enum class Level : uint8_t { kDebug, kInfo, kWarn, kError, kOff };

/// \brief One named field of an event: its value as text, and its JSON type.
struct Field {
  enum class Kind : uint8_t { kString, kNumber, kBool };

  Field(std::string field_name, std::string text)
      : name(std::move(field_name)), value(std::move(text)) {}
  Field(std::string field_name, const char* text)
      : name(std::move(field_name)), value(text) {}
  Field(std::string field_name, int number)
      : name(std::move(field_name)), value(std::to_string(number)), kind(Kind::kNumber) {}
  Field(std::string field_name, int64_t number)
      : name(std::move(field_name)), value(std::to_string(number)), kind(Kind::kNumber) {}
  Field(std::string field_name, uint64_t number)
      : name(std::move(field_name)), value(std::to_string(number)), kind(Kind::kNumber) {}
  /// A finite number, with up to `decimals` digits after the point (else a string).
  Field(std::string field_name, double number, int decimals = 3);
  Field(std::string field_name, bool flag)
      : name(std::move(field_name)), value(flag ? "true" : "false"), kind(Kind::kBool) {}

  /// \brief A field from text that is a number when it is a whole number within int64
  /// (result metadata), else a string.
  static Field Inferred(std::string field_name, std::string text);

  std::string name;
  std::string value;
  Kind kind = Kind::kString;
};

/// \brief The named fields of an event.
using Fields = std::vector<Field>;

/// \brief One log record: an event with fields, or a message (event "message").
struct Record {
  Level level;
  std::string_view event;
  const Fields& fields;
  /// Free text, for messages; empty for events.
  std::string_view message;
};

/// \brief Receive one record.
using Sink = std::function<void(const Record&)>;

/// \brief How the default sink writes records to stderr.
enum class Format : uint8_t { kText, kJson };

/// \brief Return the current minimum level (thread-safe).
Level GetLevel();
/// \brief Set the minimum level (thread-safe).
void SetLevel(Level level);
/// \brief Parse "debug", "info", "warn", "error" or "off"; return false if unknown.
bool ParseLevel(std::string_view text, Level* level);
/// \brief Replace the sink; an empty function restores the stderr sink (thread-safe).
void SetSink(Sink sink);
/// \brief Choose the stderr sink's format (thread-safe).
void SetFormat(Format format);
/// \brief Return the stderr sink's format.
Format GetFormat();
/// \brief Write `record` to stderr in the current format, whatever the level (what a
/// program must always say: its final error, its summary).
void WriteToStderr(const Record& record);
/// \brief Deliver a message to the sink if `level` is enabled.
void Write(Level level, std::string_view message);
/// \brief Deliver an event with its fields to the sink if `level` is enabled.
void Event(Level level, std::string_view event, const Fields& fields);
/// \brief Return `record` as one text line (`event key=value …`; values with spaces,
/// quotes, `=` or control characters quoted and escaped), without a level prefix.
std::string FormatText(const Record& record);
/// \brief Return `record` as one JSON object: time (RFC 3339, UTC, ms), level, event and
/// fields (typed as each Field says; a message's text is its `message` field).
std::string FormatJson(const Record& record, int64_t unix_ms);
/// \brief Return the lower-case name of a level.
const char* LevelName(Level level);

/// \brief Concatenate the arguments with operator<<.
template <typename... Args>
std::string Concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

}  // namespace ampdelta::log

#define AMPDELTA_LOG(LEVEL, ...)                                        \
  do {                                                                  \
    if (::ampdelta::log::Level::LEVEL >= ::ampdelta::log::GetLevel()) { \
      ::ampdelta::log::Write(::ampdelta::log::Level::LEVEL,             \
                             ::ampdelta::log::Concat(__VA_ARGS__));     \
    }                                                                   \
  } while (false)

#define AMPDELTA_LOG_DEBUG(...) AMPDELTA_LOG(kDebug, __VA_ARGS__)
#define AMPDELTA_LOG_INFO(...) AMPDELTA_LOG(kInfo, __VA_ARGS__)
#define AMPDELTA_LOG_WARN(...) AMPDELTA_LOG(kWarn, __VA_ARGS__)
#define AMPDELTA_LOG_ERROR(...) AMPDELTA_LOG(kError, __VA_ARGS__)
