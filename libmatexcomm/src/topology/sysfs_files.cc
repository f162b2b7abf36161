// sysfs_files.cc - see sysfs_files.h. Each call opens, reads and closes its
// own file or folder (RAII); cost: one open and a few reads.
#include "topology/sysfs_files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

namespace matexcomm::topo::sysfs {

namespace {

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};

struct MallocFreer {
  void operator()(char* text) const noexcept { std::free(text); }
};

bool is_pci_address(const std::string& text) {
  return text.size() == 12 && text[4] == ':' && text[7] == ':' && text[10] == '.';
}

}  // namespace

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  return line;
}

int number_in(const std::string& path, int fallback) {
  std::string text = read_line(path);
  if (text.empty()) return fallback;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 0);
  return end == text.c_str() ? fallback : static_cast<int>(value);
}

std::string value_of(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ':') {
      size_t start = line.find_first_not_of(" \t", key.size() + 1);
      return start == std::string::npos ? std::string() : line.substr(start);
    }
  }
  return {};
}

bool path_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::vector<std::string> entries_of(const std::string& folder) {
  std::vector<std::string> names;
  std::unique_ptr<DIR, DirCloser> dir(::opendir(folder.c_str()));
  if (!dir) return names;
  while (dirent* entry = ::readdir(dir.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string pci_address_under(const std::string& device) {
  std::unique_ptr<char, MallocFreer> resolved(::realpath(device.c_str(), nullptr));
  if (!resolved) return {};
  std::string found;
  std::stringstream parts{std::string(resolved.get())};
  for (std::string part; std::getline(parts, part, '/');) {
    if (is_pci_address(part)) found = part;
  }
  return found;
}

}  // namespace matexcomm::topo::sysfs
