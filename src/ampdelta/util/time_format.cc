#include "ampdelta/util/time_format.h"

#include <cstdio>
#include <ctime>

namespace ampdelta {

std::string FormatCivil(int64_t seconds, CivilFormat format) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  // At least four digits of year, as ISO 8601 and Spark write them: strftime's %Y writes
  // year 111 as "111", which no Delta reader (nor ampdelta) parses back.
  const long long year = static_cast<long long>(tm.tm_year) + 1900;
  char text[64];
  switch (format) {
    case CivilFormat::kDate:
      std::snprintf(text, sizeof(text), "%04lld-%02d-%02d", year, tm.tm_mon + 1,
                    tm.tm_mday);
      break;
    case CivilFormat::kDateTime:
      std::snprintf(text, sizeof(text), "%04lld-%02d-%02d %02d:%02d:%02d", year,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
      break;
    case CivilFormat::kIsoDateTime:
      std::snprintf(text, sizeof(text), "%04lld-%02d-%02dT%02d:%02d:%02d", year,
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
      break;
  }
  return text;
}

int64_t UnitsPerSecond(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return 1;
    case arrow::TimeUnit::MILLI:
      return 1'000;
    case arrow::TimeUnit::MICRO:
      return 1'000'000;
    case arrow::TimeUnit::NANO:
      return 1'000'000'000;
  }
  return 1;
}

int64_t ToMicros(int64_t value, arrow::TimeUnit::type unit) {
  const int64_t per_second = UnitsPerSecond(unit);
  return per_second >= 1'000'000 ? value / (per_second / 1'000'000)
                                 : value * (1'000'000 / per_second);
}

void SplitEpoch(int64_t value, int64_t per_second, int64_t* seconds, int64_t* fraction) {
  *seconds = value / per_second;
  *fraction = value % per_second;
  if (*fraction < 0) {
    *fraction += per_second;
    *seconds -= 1;
  }
}

}  // namespace ampdelta
