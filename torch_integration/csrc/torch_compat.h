// torch_compat.h - every difference between the torch releases the backend
// builds against, in one place. Supported: torch 2.11 to 2.15
// (cmake/MatexTorch.cmake checks the range before it builds the backend;
// tests/scripts/torch_headers_check.sh compiles the sources against another
// release's headers). What differs, read in the wheels' headers:
//   - PREMUL_SUM's factor: 2.11 and 2.12 call its holder
//     NCCLPreMulSumSupplement; 2.13 renamed it PreMulSumSupplement and keeps
//     the old name as an alias, so the old name serves every release.
//   - Work::getTimeout and Backend::gather_into_tensor are virtual from 2.14
//     on. Before, the backend's own members override nothing: gather_into_tensor
//     is then only reachable through gather, and the timeout only through
//     the backend.
//   - The flight recorder: 2.15 gives each backend a recorder of its own
//     (c10d::getFlightRecorder(name), setRank, retire_completed); 2.11-2.14
//     have one process-wide recorder with another interface. matex records
//     its collectives in torch's flight recorder with 2.15 only; with older
//     releases FlightRecord records nothing (docs/pytorch.md).
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/headeronly/version.h>

#define MATEX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// `override` where torch 2.14 and later declare the member virtual.
#if MATEX_TORCH_AT_LEAST(2, 14)
#define MATEX_OVERRIDE_FROM_TORCH_2_14 override
#else
#define MATEX_OVERRIDE_FROM_TORCH_2_14
#endif

// Per-backend flight recorders (torch 2.15 on).
#define MATEX_TORCH_HAS_NAMED_FLIGHT_RECORDERS MATEX_TORCH_AT_LEAST(2, 15)

namespace matex_torch::compat {

using PreMulSumSupplement = c10d::NCCLPreMulSumSupplement;

}  // namespace matex_torch::compat
