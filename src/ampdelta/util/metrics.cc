#include "ampdelta/util/metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ampdelta::metrics {
namespace {

// A sample value as the text format writes it.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  // The shortest text that reads back as the same double.
  char text[32];
  for (int precision = 15; precision < 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) return text;
  }
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string FormatLabels(const Labels& labels, const std::string& extra_name = {},
                         const std::string& extra_value = {}) {
  if (labels.empty() && extra_name.empty()) return {};
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::string& name, const std::string& value) {
    if (!first) out += ",";
    first = false;
    out += name + "=\"" + EscapeLabelValue(value) + "\"";
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (!extra_name.empty()) add(extra_name, extra_value);
  return out + "}";
}

// HELP text: backslash and newline escaped.
std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::Observe(double value) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  uint64_t total = 0;
  for (size_t b = 0; b <= std::min(i, bounds_.size()); ++b) {
    total += buckets_[b].load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<double> DurationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
          0.5,   1,      2.5,   5,    10,    30,   60,  120};
}

Registry& Registry::Default() {
  static Registry* registry = [] {
    auto* created = new Registry();  // never destroyed: recorded into until exit
    RegisterProcessCollector(*created);
    return created;
  }();
  return *registry;
}

Registry::Family& Registry::FamilyOf(const std::string& name, const std::string& help,
                                     Type type) {
  auto [it, created] = families_.try_emplace(name);
  if (created) {
    it->second.type = type;
    it->second.help = help;
  }
  return it->second;
}

Counter& Registry::GetCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& series = FamilyOf(name, help, Type::kCounter).counters[labels];
  if (!series) series = std::make_unique<Counter>();
  return *series;
}

Gauge& Registry::GetGauge(const std::string& name, const std::string& help,
                          const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& series = FamilyOf(name, help, Type::kGauge).gauges[labels];
  if (!series) series = std::make_unique<Gauge>();
  return *series;
}

Histogram& Registry::GetHistogram(const std::string& name, const std::string& help,
                                  std::vector<double> bounds, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& family = FamilyOf(name, help, Type::kHistogram);
  if (!family.histograms.empty()) bounds = family.histograms.begin()->second->bounds();
  auto& series = family.histograms[labels];
  if (!series) series = std::make_unique<Histogram>(std::move(bounds));
  return *series;
}

void Registry::AddCollector(std::function<void(Registry&)> collector) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collector));
}

double Registry::Value(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto family = families_.find(name);
  if (family == families_.end()) return 0;
  if (auto it = family->second.counters.find(labels);
      it != family->second.counters.end()) {
    return it->second->value();
  }
  if (auto it = family->second.gauges.find(labels); it != family->second.gauges.end()) {
    return it->second->value();
  }
  return 0;
}

std::string Registry::Render() {
  std::vector<std::function<void(Registry&)>> collectors;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect(*this);
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream out;
  for (const auto& [name, family] : families_) {
    static const char* kTypes[] = {"counter", "gauge", "histogram"};
    out << "# HELP " << name << " " << EscapeHelp(family.help) << "\n";
    out << "# TYPE " << name << " " << kTypes[static_cast<int>(family.type)] << "\n";
    switch (family.type) {
      case Type::kCounter:
        for (const auto& [labels, counter] : family.counters) {
          out << name << FormatLabels(labels) << " " << FormatValue(counter->value())
              << "\n";
        }
        break;
      case Type::kGauge:
        for (const auto& [labels, gauge] : family.gauges) {
          out << name << FormatLabels(labels) << " " << FormatValue(gauge->value())
              << "\n";
        }
        break;
      case Type::kHistogram:
        for (const auto& [labels, histogram] : family.histograms) {
          const auto& bounds = histogram->bounds();
          for (size_t i = 0; i <= bounds.size(); ++i) {
            const std::string le =
                i < bounds.size() ? FormatValue(bounds[i]) : std::string("+Inf");
            out << name << "_bucket" << FormatLabels(labels, "le", le) << " "
                << histogram->CumulativeCount(i) << "\n";
          }
          out << name << "_sum" << FormatLabels(labels) << " "
              << FormatValue(histogram->sum()) << "\n";
          // The +Inf bucket's count, read once: a count read apart could differ from it
          // by an observation landing in between.
          out << name << "_count" << FormatLabels(labels) << " "
              << histogram->CumulativeCount(bounds.size()) << "\n";
        }
        break;
    }
  }
  return out.str();
}

Counter& RetriesCounter(const std::string& error_class) {
  return Registry::Default().GetCounter("ampdelta_retries_total",
                                        "Retries of failed steps, by error class.",
                                        {{"class", error_class}});
}

void RegisterProcessCollector(Registry& registry) {
  const double start_time = [] {
    // Field 22 of /proc/self/stat: start time in clock ticks after boot.
    std::ifstream stat("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    std::ifstream uptime_file("/proc/uptime");
    double uptime = 0;
    uptime_file >> uptime;
    const size_t close = text.rfind(')');
    if (close == std::string::npos) return 0.0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
    }
    const double ticks = ::sysconf(_SC_CLK_TCK);
    const double started_after_boot = std::atof(field.c_str()) / ticks;
    const double boot = static_cast<double>(std::time(nullptr)) - uptime;
    return boot + started_after_boot;
  }();
  registry.AddCollector([start_time](Registry& r) {
    r.GetGauge("process_start_time_seconds",
               "Start time of the process since unix epoch in seconds.")
        .Set(start_time);
    std::ifstream stat("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');
    if (close != std::string::npos) {
      // Fields after the command: 3 state ... 14 utime, 15 stime, 23 vsize, 24 rss.
      std::istringstream fields(text.substr(close + 2));
      std::vector<std::string> values;
      std::string value;
      while (fields >> value) values.push_back(value);
      auto field = [&](size_t number) {
        return number - 3 < values.size() ? std::atof(values[number - 3].c_str()) : 0.0;
      };
      const double ticks = ::sysconf(_SC_CLK_TCK);
      const double page = ::sysconf(_SC_PAGESIZE);
      r.GetCounter("process_cpu_seconds_total",
                   "Total user and system CPU time spent in seconds.")
          .SetFromSource((field(14) + field(15)) / ticks);
      r.GetGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.")
          .Set(field(23));
      r.GetGauge("process_resident_memory_bytes", "Resident memory size in bytes.")
          .Set(field(24) * page);
    }
    int fds = 0;
    if (DIR* dir = ::opendir("/proc/self/fd")) {
      while (::readdir(dir) != nullptr) ++fds;
      ::closedir(dir);
      fds -= 3;  // ".", ".." and the directory's own descriptor
    }
    r.GetGauge("process_open_fds", "Number of open file descriptors.").Set(fds);
  });
}

}  // namespace ampdelta::metrics
