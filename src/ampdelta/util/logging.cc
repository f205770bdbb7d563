#include "ampdelta/util/logging.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace ampdelta::log {
namespace {

std::atomic<Level> g_level{Level::kWarn};

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

void Write(Level level, std::string_view message) {
  if (level < GetLevel() || level == Level::kOff) return;
  std::lock_guard<std::mutex> lock(SinkMutex());
  if (CurrentSink()) {
    CurrentSink()(level, message);
    return;
  }
  std::fprintf(stderr, "[ampdelta %s] %.*s\n", LevelName(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace ampdelta::log
