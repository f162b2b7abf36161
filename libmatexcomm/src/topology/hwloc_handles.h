// hwloc_handles.h - RAII owners for hwloc topologies and bitmaps.
// Internal to matex_topology; only hardware_probe.cc includes hwloc.
#pragma once

#include <hwloc.h>

#include <memory>
#include <type_traits>

#if HWLOC_API_VERSION < 0x00020000 || HWLOC_API_VERSION >= 0x00030000
#error "matex_topology is written against the hwloc 2.x API"
#endif

namespace matexcomm::topo {

struct TopologyDestroyer {
  void operator()(hwloc_topology_t topology) const noexcept { hwloc_topology_destroy(topology); }
};
using UniqueTopology = std::unique_ptr<std::remove_pointer_t<hwloc_topology_t>, TopologyDestroyer>;

struct BitmapFreer {
  void operator()(hwloc_bitmap_t bitmap) const noexcept { hwloc_bitmap_free(bitmap); }
};
using UniqueBitmap = std::unique_ptr<std::remove_pointer_t<hwloc_bitmap_t>, BitmapFreer>;

}  // namespace matexcomm::topo
