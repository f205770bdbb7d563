#pragma once

/// \file gil.h
/// \brief The GIL released around native work, and never taken back by a daemon thread
/// once the interpreter exits.
///
/// CPython ends a thread that takes the GIL after finalization began with a forced unwind
/// (pthread_exit); through nanobind's frames that unwind crashes the process (SIGSEGV in
/// std::rethrow_exception, or std::terminate). So from the atexit hook on, a thread
/// returning from native work parks instead of taking the GIL back, and the hook waits,
/// with the GIL released, for the threads that were already taking it: after the hook, no
/// thread is inside the extension waiting for the GIL when finalization starts.

#include <Python.h>

namespace ampdelta::python {

/// \brief The main thread (which finalizes the interpreter and so never parks). Call once
/// at import.
void SetMainThread(unsigned long ident);

/// \brief The atexit hook, on the main thread with the GIL held.
void MarkExiting();

/// \brief Releases the GIL for its lifetime; usable as nanobind's call_guard. Its
/// destructor does not return on a daemon thread once MarkExiting ran.
class ReleasedGil {
 public:
  ReleasedGil();
  ~ReleasedGil();
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;

 private:
  PyThreadState* state_;
};

/// \brief `work()` with the GIL released (see ReleasedGil).
template <typename Work>
auto WithoutGil(Work&& work) {
  ReleasedGil released;
  return work();
}

}  // namespace ampdelta::python
