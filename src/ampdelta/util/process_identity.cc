#include "ampdelta/util/process_identity.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "ampdelta/util/numbers.h"
#include "ampdelta/util/sha256.h"

namespace ampdelta {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// The machine boot and PID namespace: processes that share both see the same /proc.
std::string HostKey() {
  const std::string boot = ReadFirstLine("/proc/sys/kernel/random/boot_id");
  char buffer[256] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", buffer, sizeof(buffer) - 1);
  if (boot.empty() || n <= 0) return "";
  return Sha256Hex(boot + "|" + std::string(buffer, static_cast<size_t>(n)))
      .substr(0, 16);
}

// Field 22 of /proc/<pid>/stat, and whether the process is a zombie; nullopt when the
// process does not exist. The command name (field 2) may hold spaces and parentheses, so
// fields are counted after its last ')'.
std::optional<std::pair<int64_t, bool>> ReadStat(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream contents;
  contents << in.rdbuf();
  const std::string text = contents.str();
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> parts;
  std::string part;
  while (fields >> part) parts.push_back(part);
  // parts[0] is field 3 (state); field 22 is parts[19].
  if (parts.size() < 20) return std::nullopt;
  auto start = ParseInt64(parts[19]);
  if (!start) return std::nullopt;
  return std::make_pair(*start, parts[0] == "Z" || parts[0] == "X");
}

}  // namespace

std::string ProcessIdentity::ToString() const {
  return (host.empty() ? "unknown" : host) + "." + std::to_string(pid) + "." +
         std::to_string(start_ticks);
}

std::optional<ProcessIdentity> ProcessIdentity::Parse(std::string_view text) {
  const size_t first = text.find('.');
  const size_t second =
      first == std::string_view::npos ? first : text.find('.', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  ProcessIdentity identity;
  identity.host = std::string(text.substr(0, first));
  if (identity.host == "unknown") identity.host.clear();
  auto pid = ParseInt64(text.substr(first + 1, second - first - 1));
  auto start = ParseInt64(text.substr(second + 1));
  if (!pid || !start || *pid <= 0) return std::nullopt;
  identity.pid = *pid;
  identity.start_ticks = *start;
  return identity;
}

const ProcessIdentity& CurrentProcess() {
  static const ProcessIdentity identity = [] {
    ProcessIdentity self;
    self.host = HostKey();
    self.pid = static_cast<int64_t>(::getpid());
    auto stat = ReadStat(self.pid);
    self.start_ticks = stat ? stat->first : 0;
    return self;
  }();
  return identity;
}

Liveness CheckLiveness(const ProcessIdentity& process) {
  const ProcessIdentity& self = CurrentProcess();
  if (self.host.empty() || process.host != self.host) return Liveness::kUnknown;
  auto stat = ReadStat(process.pid);
  if (!stat) return Liveness::kDead;
  if (stat->first != process.start_ticks || stat->second) return Liveness::kDead;
  return Liveness::kAlive;
}

}  // namespace ampdelta
