// device_path_none.cc - the device path of a build without CUDA: none.
#include "comm/device_path.h"

namespace matexcomm {

std::unique_ptr<DevicePath> DevicePath::create(const Config&, const CollectiveContext&) { return nullptr; }

}  // namespace matexcomm
