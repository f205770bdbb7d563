#include "ampdelta/util/metrics.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ampdelta::metrics {
namespace {

TEST(MetricsTest, CountersGaugesAndHistogramsRenderInTheTextFormat) {
  Registry registry;
  registry.GetCounter("test_rows_total", "Rows.").Increment(3);
  registry.GetCounter("test_rows_total", "Rows.").Increment(2);
  registry.GetGauge("test_head_block", "Head.", {{"network", "mainnet"}}).Set(24000099);
  auto& latency = registry.GetHistogram("test_seconds", "Latency.", {0.1, 1});
  latency.Observe(0.05);
  latency.Observe(0.5);
  latency.Observe(5);
  EXPECT_EQ(registry.Render(),
            "# HELP test_head_block Head.\n"
            "# TYPE test_head_block gauge\n"
            "test_head_block{network=\"mainnet\"} 24000099\n"
            "# HELP test_rows_total Rows.\n"
            "# TYPE test_rows_total counter\n"
            "test_rows_total 5\n"
            "# HELP test_seconds Latency.\n"
            "# TYPE test_seconds histogram\n"
            "test_seconds_bucket{le=\"0.1\"} 1\n"
            "test_seconds_bucket{le=\"1\"} 2\n"
            "test_seconds_bucket{le=\"+Inf\"} 3\n"
            "test_seconds_sum 5.55\n"
            "test_seconds_count 3\n");
  EXPECT_EQ(registry.Value("test_rows_total"), 5);
  EXPECT_EQ(registry.Value("test_head_block", {{"network", "mainnet"}}), 24000099);
  EXPECT_EQ(registry.Value("test_head_block", {{"network", "base"}}), 0);
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  Registry registry;
  registry
      .GetCounter("test_errors_total", "Errors\nby \\class.",
                  {{"class", "a \"b\"\\c\nd"}})
      .Increment();
  EXPECT_EQ(registry.Render(),
            "# HELP test_errors_total Errors\\nby \\\\class.\n"
            "# TYPE test_errors_total counter\n"
            "test_errors_total{class=\"a \\\"b\\\"\\\\c\\nd\"} 1\n");
}

TEST(MetricsTest, TheProcessCollectorReportsThisProcess) {
  Registry registry;
  RegisterProcessCollector(registry);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
  EXPECT_GT(registry.Value("process_resident_memory_bytes"), 1e6);
  EXPECT_GT(registry.Value("process_open_fds"), 0);
  EXPECT_GT(registry.Value("process_start_time_seconds"), 1.7e9);  // after 2023
}

TEST(MetricsTest, SeriesAreSafeToRecordFromManyThreads) {
  Registry registry;
  auto& counter = registry.GetCounter("test_total", "T.");
  auto& histogram = registry.GetHistogram("test_h", "H.", DurationBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.Increment();
        histogram.Observe(0.002);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000);
  EXPECT_EQ(histogram.count(), 40000u);
  EXPECT_EQ(histogram.CumulativeCount(0), 0u);
  EXPECT_EQ(histogram.CumulativeCount(1), 40000u);  // le 0.0025
}

}  // namespace
}  // namespace ampdelta::metrics
