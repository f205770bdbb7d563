#include "ampdelta/util/runtime.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <arrow/compute/initialize.h>
#include <arrow/filesystem/filesystem.h>

namespace ampdelta {

arrow::Status InitializeRuntime() {
  static std::once_flag once;
  static arrow::Status result;
  std::call_once(once, [] {
    result = arrow::compute::Initialize();
    if (!result.ok()) return;
    arrow::fs::FileSystemGlobalOptions options;
    options.tls_ca_file_path = "/etc/ssl/certs/ca-certificates.crt";
    options.tls_ca_dir_path = "/etc/ssl/certs";
    result = arrow::fs::Initialize(options);
  });
  return result;
}

void SelectDefaultMemoryPool() {
  // An empty value counts as unset: Arrow would take it for its own default.
  const char* chosen = std::getenv("ARROW_DEFAULT_MEMORY_POOL");
  if (chosen == nullptr || *chosen == '\0') {
    ::setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/1);
  }
}

int UsableCores() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
    return CPU_COUNT(&cpus);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace ampdelta
