#include "ampdelta/util/logging.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"
#include "ampdelta/util/time_format.h"
#include "ampdelta/util/utf8.h"

namespace ampdelta::log {
namespace {

std::atomic<Level> g_level{Level::kWarn};
std::atomic<Format> g_format{Format::kText};

std::mutex& SinkMutex() {
  static std::mutex mutex;
  return mutex;
}

Sink& CurrentSink() {
  static Sink sink;
  return sink;
}

}  // namespace

Level GetLevel() { return g_level.load(std::memory_order_relaxed); }

void SetLevel(Level level) { g_level.store(level, std::memory_order_relaxed); }

bool ParseLevel(std::string_view text, Level* level) {
  static constexpr std::pair<std::string_view, Level> kNames[] = {
      {"debug", Level::kDebug},
      {"info", Level::kInfo},
      {"warn", Level::kWarn},
      {"error", Level::kError},
      {"off", Level::kOff}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *level = value;
      return true;
    }
  }
  return false;
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    case Level::kOff:
      return "off";
  }
  return "?";
}

void SetSink(Sink sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  CurrentSink() = std::move(sink);
}

void SetFormat(Format format) { g_format.store(format, std::memory_order_relaxed); }

Format GetFormat() { return g_format.load(std::memory_order_relaxed); }

namespace {

void WriteLine(const Record& record) {
  std::string line;
  if (g_format.load(std::memory_order_relaxed) == Format::kJson) {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    line = FormatJson(record, now_ms);
  } else {
    line =
        std::string("[ampdelta ") + LevelName(record.level) + "] " + FormatText(record);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void Deliver(const Record& record) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  if (CurrentSink()) {
    CurrentSink()(record);
    return;
  }
  WriteLine(record);
}

// A value that needs quoting in `key=value` text: empty, or with a space, quote, `=`,
// backslash or control character (a table name must not forge log lines).
bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || byte < 0x20 || byte == 0x7f) {
      return true;
    }
  }
  return false;
}

// The JSON value of a field, as its kind says.
nlohmann::ordered_json FieldValue(const Field& field) {
  switch (field.kind) {
    case Field::Kind::kBool:
      return field.value == "true";
    case Field::Kind::kNumber: {
      errno = 0;
      char* end = nullptr;
      if (field.value.find('.') == std::string::npos) {
        const long long whole = std::strtoll(field.value.c_str(), &end, 10);
        if (errno == 0 && end != nullptr && *end == '\0') return whole;
      } else {
        const double number = std::strtod(field.value.c_str(), &end);
        if (errno == 0 && end != nullptr && *end == '\0') return number;
      }
      return field.value;
    }
    case Field::Kind::kString:
      break;
  }
  return field.value;
}

}  // namespace

Field::Field(std::string field_name, double number, int decimals)
    : name(std::move(field_name)) {
  if (!std::isfinite(number)) {
    value = std::isnan(number) ? "NaN" : (number > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, number);
  value = text;
  kind = Kind::kNumber;
}

Field Field::Inferred(std::string field_name, std::string text) {
  const bool whole = !text.empty() && text.size() <= 19 &&
                     text.find_first_not_of("0123456789") == std::string::npos &&
                     (text[0] != '0' || text.size() == 1);
  Field field(std::move(field_name), std::move(text));
  if (whole) field.kind = Kind::kNumber;
  return field;
}

std::string FormatText(const Record& record) {
  std::string out(record.message.empty() ? record.event : record.message);
  for (const auto& field : record.fields) {
    out += " " + field.name + "=";
    if (!NeedsQuotes(field.value)) {
      out += field.value;
      continue;
    }
    std::string quoted;
    for (char c : field.value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    out += '"' + EscapeControls(quoted) + '"';
  }
  return out;
}

std::string FormatJson(const Record& record, int64_t unix_ms) {
  nlohmann::ordered_json out;
  const int64_t seconds = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
  char millis[8];
  std::snprintf(millis, sizeof(millis), ".%03d",
                static_cast<int>(unix_ms - seconds * 1000));
  out["time"] = FormatCivil(seconds, CivilFormat::kIsoDateTime) + millis + "Z";
  out["level"] = LevelName(record.level);
  out["event"] = std::string(record.event);
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  if (!record.message.empty()) fields["message"] = std::string(record.message);
  for (const auto& field : record.fields) fields[field.name] = FieldValue(field);
  out["fields"] = std::move(fields);
  return json_util::DumpJsonLossy(out);
}

void WriteToStderr(const Record& record) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  WriteLine(record);
}

void Write(Level level, std::string_view message) {
  if (level < GetLevel() || level == Level::kOff) return;
  static const Fields kNone;
  Deliver(Record{level, "message", kNone, message});
}

void Event(Level level, std::string_view event, const Fields& fields) {
  if (level < GetLevel() || level == Level::kOff) return;
  Deliver(Record{level, event, fields, {}});
}

}  // namespace ampdelta::log
