#pragma once

/// \file process_identity.h
/// \brief Which process on which machine left something behind, and whether it still
/// runs.
///
/// Writers record their identity in what they leave in a table while they work (write
/// leases, temporary files), so a vacuum can tell a crashed writer's leftovers from a
/// live writer's work in progress. Only a process on the same machine and in the same PID
/// namespace can be checked; for any other the answer is kUnknown and callers fall back
/// to age.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ampdelta {

/// \brief A process, told apart from any other that ever ran: the machine's boot and PID
/// namespace (hashed), the PID, and the process's start time (which tells a reused PID).
struct ProcessIdentity {
  /// 16 hex digits naming this boot of this machine and PID namespace; empty when
  /// unknown.
  std::string host;
  int64_t pid = 0;
  /// Start time in clock ticks since boot (/proc/<pid>/stat field 22).
  int64_t start_ticks = 0;

  /// \brief Return `host.pid.start_ticks`, a token safe in file names.
  std::string ToString() const;
  /// \brief Parse ToString()'s form; nullopt for anything else.
  static std::optional<ProcessIdentity> Parse(std::string_view text);
};

/// \brief Return this process's identity (computed once).
const ProcessIdentity& CurrentProcess();

/// \brief Whether a process is running.
enum class Liveness : uint8_t { kAlive, kDead, kUnknown };

/// \brief Return kAlive or kDead for a process of this machine and PID namespace,
/// kUnknown for any other (or when /proc cannot tell).
Liveness CheckLiveness(const ProcessIdentity& process);

}  // namespace ampdelta
