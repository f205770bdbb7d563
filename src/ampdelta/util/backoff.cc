#include "ampdelta/util/backoff.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

namespace ampdelta {

std::chrono::milliseconds BackoffPolicy::Delay(int attempt) const {
  const double nominal = std::min(
      static_cast<double>(initial.count()) * std::pow(multiplier, std::max(attempt, 0)),
      static_cast<double>(max.count()));
  double delay = std::max(nominal, 0.0);
  if (jitter) {
    static thread_local std::mt19937_64 random{std::random_device{}()};
    delay *= std::uniform_real_distribution<double>(0.5, 1.0)(random);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(delay));
}

void SleepFor(std::chrono::milliseconds delay) { std::this_thread::sleep_for(delay); }

}  // namespace ampdelta
