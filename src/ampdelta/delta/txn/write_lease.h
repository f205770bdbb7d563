#pragma once

/// \file write_lease.h
/// \brief Leases that keep VACUUM away from writes in flight (docs/reliability.md).
///
/// A data file exists before the commit that references it, and a vacuum cannot read a
/// commit that is not made yet: without help it takes a load's files for garbage. So a
/// writer registers a lease (`_ampdelta_leases/<token>.json`) before it writes anything,
/// names every file it writes with the lease's token (deletion vectors, whose names are
/// fixed, go in a folder named by it), and removes the lease after its
/// commit (or abort). A vacuum lists the table's files first, then reads the leases, then
/// the latest snapshot, and deletes only what no lease protects: a file it saw was
/// written after its lease existed, so either the vacuum sees the lease or the lease is
/// gone because the commit landed and the snapshot it reads next has the file.
///
/// A writer that re-adds files that already exist (RESTORE) lists them in its lease and
/// waits for running vacuums (which hold kVacuum leases) to end before checking the
/// files.
///
/// A lease's writer refreshes it while it lives. A vacuum treats a lease as dead when its
/// process is known to have exited (same machine) or it was not refreshed for the TTL,
/// and removes it, so a crashed writer's files become garbage.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/result.h>

#include "ampdelta/storage/object_store.h"
#include "ampdelta/util/process_identity.h"

namespace ampdelta::delta {

/// The folder of lease files, at the table root (hidden from readers and from VACUUM).
inline constexpr const char* kLeaseDir = "_ampdelta_leases";
/// A lease not refreshed for this long is dead, whoever holds it.
inline constexpr std::chrono::milliseconds kLeaseTtl = std::chrono::hours(1);
/// How often a live lease is refreshed.
inline constexpr std::chrono::milliseconds kLeaseHeartbeat = std::chrono::minutes(5);

/// \brief What a lease is for.
enum class LeaseKind : uint8_t {
  /// A write in flight: protects files named with its token and the paths it lists.
  kWrite,
  /// A vacuum deleting files: writers re-adding existing files wait for it to end.
  kVacuum,
};

/// \brief A held lease; released (its file deleted) on Release() or destruction.
/// Thread-safe.
class WriteLease {
 public:
  /// \brief Register a lease on the table at `store`.
  /// \param[in] paths table-relative keys of existing files the holder will add again
  /// \param[in] heartbeat how often the lease is refreshed (tests shorten it)
  static arrow::Result<std::shared_ptr<WriteLease>> Acquire(
      std::shared_ptr<storage::ObjectStore> store, LeaseKind kind = LeaseKind::kWrite,
      std::vector<std::string> paths = {},
      std::chrono::milliseconds heartbeat = kLeaseHeartbeat);

  ~WriteLease();
  WriteLease(const WriteLease&) = delete;
  WriteLease& operator=(const WriteLease&) = delete;

  /// \brief Return the token every file written under this lease carries in its name.
  const std::string& token() const { return token_; }

  /// \brief Return true while the lease file exists and was never found missing (a vacuum
  /// removes leases it judges dead, e.g. of a process that was stopped for longer than
  /// the TTL; what the lease protected may be gone even if a later refresh put it back).
  arrow::Result<bool> StillHeld();

  /// \brief Delete the lease file and stop refreshing it.
  arrow::Status Release();

 private:
  struct State;
  explicit WriteLease(std::unique_ptr<State> state, std::string token);
  std::unique_ptr<State> state_;
  std::string token_;
};

/// \brief One lease as a vacuum reads it.
struct LeaseRecord {
  std::string key;
  std::string token;
  LeaseKind kind = LeaseKind::kWrite;
  std::optional<ProcessIdentity> owner;
  int64_t last_modified_ms = 0;
  std::vector<std::string> paths;
};

/// \brief The leases of a table, split into live and dead ones.
struct Leases {
  std::vector<LeaseRecord> live;
  std::vector<LeaseRecord> dead;

  /// \brief Return true when a live write lease protects the table-relative `key` of a
  /// file the log does not mention: its file name carries the lease's token (a deletion
  /// vector's folder does), or the lease lists it.
  bool Protects(const std::string& key) const;
  /// \brief Return true when a live write lease lists `key` (a file the log removed that
  /// a writer adds back; files the log mentions were committed, so their tokens protect
  /// nothing any more).
  bool Lists(const std::string& key) const;
  /// \brief Return true when a live vacuum lease other than `except` exists.
  bool VacuumRunning(const std::string& except = "") const;
};

/// \brief Read the table's leases. A lease is dead when its process is known to have
/// exited, or it was not refreshed within `ttl`; an unreadable lease file counts as live
/// until the TTL passes (it may be half written).
arrow::Result<Leases> ReadLeases(storage::ObjectStore& store, int64_t now_ms,
                                 std::chrono::milliseconds ttl = kLeaseTtl);

/// \brief Wait until no vacuum other than `except` holds a lease (polling), or fail with
/// kCommitConflict after `timeout`.
arrow::Status WaitForVacuums(storage::ObjectStore& store,
                             std::chrono::milliseconds timeout,
                             const std::string& except = "");

}  // namespace ampdelta::delta
