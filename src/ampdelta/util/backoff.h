#pragma once

/// \file backoff.h
/// \brief The one retry back-off: exponential, capped, with jitter; and an injectable
/// sleep, so retry loops can be tested without waiting.

#include <chrono>
#include <functional>

namespace ampdelta {

/// \brief Delays between the attempts of a retried operation.
struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{5000};
  double multiplier = 2.0;
  /// Spread retries of many clients: a uniform delay between half the nominal one and it.
  bool jitter = true;

  /// \brief Return the delay before retry `attempt` (0 for the first retry):
  /// initial · multiplier^attempt, at most `max`, jittered.
  std::chrono::milliseconds Delay(int attempt) const;
};

/// \brief Waits a delay: SleepFor in production, a recorder in tests.
using SleepFunction = std::function<void(std::chrono::milliseconds)>;

/// \brief Block the calling thread for `delay`.
void SleepFor(std::chrono::milliseconds delay);

}  // namespace ampdelta
