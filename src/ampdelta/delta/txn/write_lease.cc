#include "ampdelta/delta/txn/write_lease.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <arrow/buffer.h>
#include <nlohmann/json.hpp>

#include "ampdelta/delta/txn/committer.h"
#include "ampdelta/util/clock.h"
#include "ampdelta/util/logging.h"
#include "ampdelta/util/status.h"
#include "ampdelta/util/uuid.h"

namespace ampdelta::delta {
namespace {

using nlohmann::json;

std::string LeaseKey(const std::string& token) {
  return std::string(kLeaseDir) + "/" + token + ".json";
}

std::string NewToken() {
  std::string token;
  for (char c : NewUuid()) {
    if (c != '-') token += c;
  }
  return token.substr(0, 16);
}

const char* KindName(LeaseKind kind) {
  return kind == LeaseKind::kVacuum ? "vacuum" : "write";
}

std::optional<LeaseRecord> ParseLease(const storage::ObjectMeta& meta,
                                      const std::string& text) {
  const json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) return std::nullopt;
  LeaseRecord record;
  record.key = meta.path;
  record.last_modified_ms = meta.last_modified_ms;
  auto token = doc.find("token");
  auto kind = doc.find("kind");
  auto owner = doc.find("owner");
  if (token == doc.end() || !token->is_string()) return std::nullopt;
  record.token = token->get<std::string>();
  if (record.token.size() < 8) return std::nullopt;  // too short to name files safely
  if (kind != doc.end() && kind->is_string() && kind->get<std::string>() == "vacuum") {
    record.kind = LeaseKind::kVacuum;
  }
  if (owner != doc.end() && owner->is_string()) {
    record.owner = ProcessIdentity::Parse(owner->get<std::string>());
  }
  auto paths = doc.find("paths");
  if (paths != doc.end() && paths->is_array()) {
    for (const auto& path : *paths) {
      if (path.is_string()) record.paths.push_back(path.get<std::string>());
    }
  }
  return record;
}

}  // namespace

struct WriteLease::State {
  std::shared_ptr<storage::ObjectStore> store;
  std::string key;
  std::string body;
  std::mutex mutex;
  std::condition_variable wake;
  bool released = false;
  // Set when a refresh found the lease gone: a vacuum judged it dead and may have deleted
  // files it protected. The refresh puts it back for what is written from now on, but the
  // holder can no longer trust it for what it wrote before (StillHeld() says false).
  std::atomic<bool> lost{false};
  std::chrono::milliseconds interval{kLeaseHeartbeat};
  std::thread heartbeat;

  void Beat() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!released) {
      if (wake.wait_for(lock, interval, [&] { return released; })) break;
      lock.unlock();
      auto head = store->Head(key);
      if (!head.ok() && IsError(head.status(), ErrorCode::kNotFound) && !lost) {
        AMPDELTA_LOG_WARN("write lease was removed by a vacuum key=", key,
                          "; commits check their files from now on");
        lost = true;
      }
      // Rewriting the file moves its modification time: the lease stays live.
      arrow::Status put =
          store->Put(key, arrow::Buffer::FromString(body), storage::PutMode::kOverwrite);
      if (!put.ok())
        AMPDELTA_LOG_WARN("write lease refresh failed key=", key,
                          " error=", put.message());
      lock.lock();
    }
  }
};

WriteLease::WriteLease(std::unique_ptr<State> state, std::string token)
    : state_(std::move(state)), token_(std::move(token)) {}

namespace {

// A write leaves no folder of its own behind: the lease folder once no lease is in it,
// and the table's folder (with the parents made for it) when nothing was committed to a
// new table (a refused write leaves the path as it was).
void RemoveLeaseFolders(storage::ObjectStore& store) {
  store.RemoveFolderIfEmpty(kLeaseDir);
  store.RemoveFolderIfEmpty("");
}

}  // namespace

arrow::Result<std::shared_ptr<WriteLease>> WriteLease::Acquire(
    std::shared_ptr<storage::ObjectStore> store, LeaseKind kind,
    std::vector<std::string> paths, std::chrono::milliseconds heartbeat) {
  auto state = std::make_unique<State>();
  state->interval = heartbeat;
  const std::string token = NewToken();
  state->store = std::move(store);
  state->key = LeaseKey(token);
  json doc = {{"token", token},
              {"kind", KindName(kind)},
              {"owner", CurrentProcess().ToString()},
              {"created", NowMs()},
              {"paths", paths}};
  state->body = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  auto created = CreateIfAbsent(*state->store, state->key, state->body);
  if (!created.ok() || created->state != CreateOutcome::State::kCreated) {
    // A full disk, say: the folders made for the lease go with it.
    RemoveLeaseFolders(*state->store);
    if (!created.ok()) return created.status();
    // The key holds a fresh random token, so only a transient failure leaves it free.
    return created->failure.WithMessage("write lease ", state->key,
                                        " not created: ", created->failure.message());
  }
  State* raw = state.get();
  state->heartbeat = std::thread([raw] { raw->Beat(); });
  return std::shared_ptr<WriteLease>(new WriteLease(std::move(state), token));
}

WriteLease::~WriteLease() {
  arrow::Status released = Release();
  if (!released.ok()) {
    AMPDELTA_LOG_WARN("write lease not removed key=", state_->key,
                      " error=", released.message());
  }
}

arrow::Result<bool> WriteLease::StillHeld() {
  if (state_->lost) return false;
  auto head = state_->store->Head(state_->key);
  if (head.ok()) return true;
  if (IsError(head.status(), ErrorCode::kNotFound)) {
    state_->lost = true;
    return false;
  }
  return head.status();
}

arrow::Status WriteLease::Release() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->released) return arrow::Status::OK();
    state_->released = true;
  }
  state_->wake.notify_all();
  if (state_->heartbeat.joinable()) state_->heartbeat.join();
  ARROW_RETURN_NOT_OK(state_->store->Delete(state_->key));
  RemoveLeaseFolders(*state_->store);
  return arrow::Status::OK();
}

bool Leases::Protects(const std::string& key) const {
  const size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string::npos
                                    ? std::string_view(key)
                                    : std::string_view(key).substr(slash + 1);
  // Deletion-vector files have fixed names: their folder carries the token.
  std::string_view folder;
  if (slash != std::string::npos && name.rfind("deletion_vector_", 0) == 0) {
    folder = std::string_view(key).substr(0, slash);
    folder = folder.substr(
        folder.rfind('/') == std::string_view::npos ? 0 : folder.rfind('/') + 1);
  }
  for (const auto& lease : live) {
    if (lease.kind != LeaseKind::kWrite) continue;
    if (name.find(lease.token) != std::string_view::npos) return true;
    if (!folder.empty() && folder == lease.token) return true;
    if (std::find(lease.paths.begin(), lease.paths.end(), key) != lease.paths.end())
      return true;
  }
  return false;
}

bool Leases::Lists(const std::string& key) const {
  return std::any_of(live.begin(), live.end(), [&](const LeaseRecord& lease) {
    return lease.kind == LeaseKind::kWrite &&
           std::find(lease.paths.begin(), lease.paths.end(), key) != lease.paths.end();
  });
}

bool Leases::VacuumRunning(const std::string& except) const {
  return std::any_of(live.begin(), live.end(), [&](const LeaseRecord& lease) {
    return lease.kind == LeaseKind::kVacuum && lease.token != except;
  });
}

arrow::Result<Leases> ReadLeases(storage::ObjectStore& store, int64_t now_ms,
                                 std::chrono::milliseconds ttl) {
  Leases leases;
  ARROW_ASSIGN_OR_RAISE(auto objects, store.List(std::string(kLeaseDir) + "/", ""));
  for (const auto& object : objects) {
    const bool expired = object.last_modified_ms < now_ms - ttl.count();
    auto data = store.Get(object.path);
    if (!data.ok()) {
      if (IsError(data.status(), ErrorCode::kNotFound)) continue;  // released meanwhile
      return data.status();
    }
    std::optional<LeaseRecord> record = ParseLease(object, (*data)->ToString());
    if (!record) {
      LeaseRecord unreadable;
      unreadable.key = object.path;
      unreadable.last_modified_ms = object.last_modified_ms;
      // An unparsable lease protects nothing by name; it only ages out.
      (expired ? leases.dead : leases.live).push_back(std::move(unreadable));
      continue;
    }
    const bool exited = record->owner && CheckLiveness(*record->owner) == Liveness::kDead;
    (expired || exited ? leases.dead : leases.live).push_back(std::move(*record));
  }
  return leases;
}

arrow::Status WaitForVacuums(storage::ObjectStore& store,
                             std::chrono::milliseconds timeout,
                             const std::string& except) {
  const int64_t deadline = NowMs() + timeout.count();
  while (true) {
    ARROW_ASSIGN_OR_RAISE(auto leases, ReadLeases(store, NowMs()));
    if (!leases.VacuumRunning(except)) return arrow::Status::OK();
    if (NowMs() >= deadline) {
      return MakeError(ErrorCode::kCommitConflict, arrow::StatusCode::IOError,
                       "a VACUUM of this table is still running after ",
                       timeout.count() / 1000, " s; retry when it has finished");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace ampdelta::delta
