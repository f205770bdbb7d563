#pragma once

/// \file metrics.h
/// \brief Process-wide metrics (counters, gauges, histograms) in the Prometheus data
/// model, rendered in its text exposition format (version 0.0.4).
///
/// The library records what it does (rows loaded, commits, reorgs, retries, checkpoint
/// times) in Registry::Default(); the CLI serves it on `/metrics`. Recording is a few
/// atomic operations; a metric is looked up once and kept by reference.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ampdelta::metrics {

/// \brief Label names and values of one series, e.g. {{"network", "mainnet"}}.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// \brief A value that only goes up. Thread-safe.
class Counter {
 public:
  void Increment(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  /// \brief Take the value of a source that only goes up (a collector reading /proc).
  void SetFromSource(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// \brief A value that goes up and down. Thread-safe.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double by) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// \brief Observations counted into cumulative buckets, with their sum. Thread-safe.
class Histogram {
 public:
  /// \param[in] bounds the buckets' upper bounds, increasing (+Inf is implied)
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  /// \brief Return the number of observations at or below bounds()[i] (i ==
  /// bounds().size(): all of them).
  uint64_t CumulativeCount(size_t i) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket, not cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

/// \brief Buckets for durations in seconds, from 1 ms to 2 minutes.
std::vector<double> DurationBuckets();

/// \brief Named metric families and their series. Thread-safe; metrics live as long as
/// the registry, so references to them stay valid.
class Registry {
 public:
  /// \brief The process's registry, which the library records in.
  static Registry& Default();

  /// \brief Return the series of a counter family, creating it (and the family) the first
  /// time. `name` follows Prometheus conventions (`ampdelta_rows_loaded_total`).
  Counter& GetCounter(const std::string& name, const std::string& help,
                      const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help,
                  const Labels& labels = {});
  /// \brief Return a histogram series; the bounds of the family's first series apply.
  Histogram& GetHistogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds, const Labels& labels = {});

  /// \brief Add a function run at every Render() to refresh gauges (process memory).
  void AddCollector(std::function<void(Registry&)> collector);

  /// \brief Return every family in the text exposition format, sorted by name.
  std::string Render();

  /// \brief Return the value of a counter or gauge series, or 0 when it does not exist
  /// (tests and health checks).
  double Value(const std::string& name, const Labels& labels = {}) const;

 private:
  enum class Type : uint8_t { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& FamilyOf(const std::string& name, const std::string& help, Type type);

  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
  std::vector<std::function<void(Registry&)>> collectors_;
};

/// \brief The counter of retries by error class (`ampdelta_retries_total{class=…}`),
/// which every layer that retries (commits, loads, streams) counts in.
Counter& RetriesCounter(const std::string& error_class);

/// \brief Add the standard `process_*` gauges (resident and virtual memory, CPU seconds,
/// start time, open file descriptors), read from /proc at every scrape.
void RegisterProcessCollector(Registry& registry);

/// \brief Escape a label value for the text format (backslash, quote, newline).
std::string EscapeLabelValue(std::string_view value);

}  // namespace ampdelta::metrics
