#include "gil.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ampdelta::python {
namespace {

std::mutex g_mutex;
std::condition_variable g_changed;
bool g_exiting = false;           // guarded by g_mutex
int g_taking = 0;                 // threads taking the GIL back; guarded by g_mutex
unsigned long g_main_thread = 0;  // set once at import

// A wait for threads stuck elsewhere must not hang the exit.
constexpr auto kExitWait = std::chrono::seconds(5);

}  // namespace

void SetMainThread(unsigned long ident) { g_main_thread = ident; }

void MarkExiting() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_exiting = true;
  }
  // Those that passed the check wait for the GIL: let them have it now, while the
  // interpreter still runs, and wait until they have.
  PyThreadState* state = PyEval_SaveThread();
  {
    std::unique_lock<std::mutex> lock(g_mutex);
    g_changed.wait_for(lock, kExitWait, [] { return g_taking == 0; });
  }
  PyEval_RestoreThread(state);
}

ReleasedGil::ReleasedGil() : state_(PyEval_SaveThread()) {}

ReleasedGil::~ReleasedGil() {
  bool park = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    park = g_exiting && PyThread_get_thread_ident() != g_main_thread;
    if (!park) ++g_taking;
  }
  // The process is exiting: this daemon thread never runs Python again.
  while (park) std::this_thread::sleep_for(std::chrono::hours(1));
  PyEval_RestoreThread(state_);
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_taking;
  g_changed.notify_all();
}

}  // namespace ampdelta::python
