// sysfs_files.h - reading the small text files and folders of /sys and /proc
// for the /sys topology probe (hardware_sysfs.h). Never throw for a missing
// or unreadable path: they answer empty. Internal to matex_topology.
#pragma once

#include <string>
#include <vector>

namespace matexcomm::topo::sysfs {

// The first line of a file, trailing blanks removed; "" if it cannot be read.
std::string read_line(const std::string& path);

// The number a file holds (decimal, or 0x hexadecimal), or `fallback`.
int number_in(const std::string& path, int fallback);

// The line of a key-value file ("Key:\tvalue", as /proc/self/status) after the
// key and its blanks; "" when the key is absent.
std::string value_of(const std::string& path, const std::string& key);

bool path_exists(const std::string& path);

// A folder's entries but "." and "..", sorted by name; {} if it cannot be read.
std::vector<std::string> entries_of(const std::string& folder);

// The PCI function ("0000:3b:00.0") a device path resolves under, the last
// one in its real path (a virtio NIC's device is virtio0, whose parent is the
// PCI function); "" when none.
std::string pci_address_under(const std::string& device);

}  // namespace matexcomm::topo::sysfs
