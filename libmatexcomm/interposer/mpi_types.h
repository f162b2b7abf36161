// mpi_types.h - MPI datatypes and ops in libmatexcomm's terms.
//
// Reductions take predefined datatypes only, matched by handle (no MPI call,
// so an invalid handle is left for MPI to report). Data movement (Bcast,
// Allgather[v]) takes any committed datatype: only its type signature has to
// match across ranks, so a rank whose layout is not one contiguous run packs
// it locally, and every rank still takes the same route.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "call_report.h"
#include "matexcomm/matexcomm.h"

namespace matexinterpose {

// A reduction in libmatexcomm's terms: `count_factor` elements of dtype per
// MPI element (2 for complex sums, done as sums of their parts).
struct Reduction {
  matex_dtype_t dtype = MATEX_FLOAT32;
  matex_op_t op = MATEX_SUM;
  size_t count_factor = 1;
  size_t element_bytes = 0;  // bytes of one MPI element
};

// Reason::kServed with *out filled, or why the pair goes to PMPI
// (Reason::kDatatype or Reason::kOp).
Reason map_reduction(MPI_Datatype type, MPI_Op op, Reduction* out);

// `offset` bytes from `base`, as addresses: MPI_BOTTOM is address 0, so an
// absolute displacement from it is an address too.
inline char* byte_address(const void* base, MPI_Aint offset) {
  return reinterpret_cast<char*>(reinterpret_cast<intptr_t>(base) + static_cast<intptr_t>(offset));
}

// Where `count` elements of `type` at `buffer` lie (MPI_BOTTOM allowed).
struct TypedBuffer {
  char* start = nullptr;     // first byte of the data when contiguous
  size_t bytes = 0;          // the type signature's size: count * MPI_Type_size
  bool contiguous = false;   // one run of `bytes` bytes from `start`, in signature order
  size_t extent = 0;         // of one element (to step between elements)
};

// MPI_SUCCESS, or MPI's error code for a datatype it rejects.
int describe(const void* buffer, MPI_Aint count, MPI_Datatype type, TypedBuffer* out);

// Data movement is served up to this many bytes per call (and per block):
// MPI_Pack and the library's MPI legs count in ints. Signature sizes agree on
// every rank, so larger calls go to MPI everywhere.
constexpr size_t kMaxMovedBytes = 2147483647;

// Packs / unpacks a non-contiguous buffer through `bytes` of scratch.
int pack(const void* buffer, MPI_Aint count, MPI_Datatype type, std::vector<char>& scratch, size_t offset,
         size_t bytes, MPI_Comm comm);
int unpack(const std::vector<char>& scratch, size_t offset, size_t bytes, void* buffer, MPI_Aint count,
           MPI_Datatype type, MPI_Comm comm);

}  // namespace matexinterpose
