#pragma once

/// \file logging.h
/// \brief A small logging facade: levels, a replaceable sink, and macros that skip
/// formatting when the level is off.
///
/// The library never writes to stdout. By default messages go to stderr; the CLI may
/// install another sink. Messages are short `event key=value …` lines.

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace ampdelta::log {

/// \brief Severity of a log message, in increasing order.
enum class Level : uint8_t { kDebug, kInfo, kWarn, kError, kOff };

/// \brief Receive one formatted message.
using Sink = std::function<void(Level, std::string_view)>;

/// \brief Return the current minimum level (thread-safe).
Level GetLevel();
/// \brief Set the minimum level (thread-safe).
void SetLevel(Level level);
/// \brief Parse "debug", "info", "warn", "error" or "off"; return false if unknown.
bool ParseLevel(std::string_view text, Level* level);
/// \brief Replace the sink; an empty function restores the stderr sink (thread-safe).
void SetSink(Sink sink);
/// \brief Deliver a message to the sink if `level` is enabled.
void Write(Level level, std::string_view message);
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
