// host_id.cc - the identity of the machine a rank runs on.
//
// Two ranks may share memory only when they run under the same kernel, so the
// default id is "<hostname>/<boot id>": the hostname alone is not enough
// (cloned containers and VMs often share one), and the boot id alone would
// merge containers that cannot see each other's /dev/shm. MATEX_HOSTID, when
// set, replaces the whole id.
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"
#include "topology/layout.h"

namespace matexcomm::topo {

namespace {

constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";

std::string trimmed(const std::string& text) {
  const char* blanks = " \t\r\n\v\f";
  size_t first = text.find_first_not_of(blanks);
  if (first == std::string::npos) return {};
  size_t last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

std::string local_hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
  int saved_errno = errno;
  struct utsname system_names {};
  if (uname(&system_names) == 0 && system_names.nodename[0] != '\0') return system_names.nodename;
  MATEX_RAISE(MATEX_ERR_SYSTEM, std::string("cannot determine the hostname (gethostname: ") +
                                    std::strerror(saved_errno) +
                                    "); set MATEX_HOSTID to name this host");
}

// Empty when the file is missing or unreadable (non-Linux, restricted /proc).
std::string boot_id() {
  std::ifstream file(kBootIdPath);
  std::string line;
  if (!file || !std::getline(file, line)) return {};
  return trimmed(line);
}

}  // namespace

std::string make_host_id(const std::string& override_id) {
  if (!override_id.empty()) return override_id;
  std::string id = local_hostname();
  std::string boot = boot_id();
  if (!boot.empty()) id += "/" + boot;
  return id;
}

}  // namespace matexcomm::topo
