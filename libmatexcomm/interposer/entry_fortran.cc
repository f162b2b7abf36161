// entry_fortran.cc - the Fortran entry points. Open MPI's Fortran bindings
// call PMPI_* directly, so a program using mpif.h, `use mpi` or `use mpi_f08`
// never reaches the C wrappers. These definitions take the bindings' place
// for the blocking collectives (gfortran's names: mpi_<name>_ for mpif.h and
// `use mpi`, mpi_<name>_f08_ for `use mpi_f08`, whose handles are one
// integer each), convert the handles and the MPI_IN_PLACE / MPI_BOTTOM
// sentinels, and call the C entry points, which route and count as for C.
// MPI_Init is wrapped to register the MPI_Finalize hook; the nonblocking
// forms stay Open MPI's (MPI runs them anyway).
#include <dlfcn.h>
#include <mpi.h>

#include "comm_state.h"

static_assert(sizeof(MPI_Fint) == sizeof(int), "count arrays are passed through as int arrays");

namespace {

// Open MPI's Fortran sentinels: common blocks whose addresses Fortran passes
// for MPI_IN_PLACE and MPI_BOTTOM (null when no Fortran library is loaded).
void* sentinel(const char* name) { return dlsym(RTLD_DEFAULT, name); }

const void* c_buffer(const void* buffer) {
  static void* const in_place = sentinel("mpi_fortran_in_place_");
  static void* const bottom = sentinel("mpi_fortran_bottom_");
  if (buffer != nullptr && buffer == in_place) return MPI_IN_PLACE;
  if (buffer != nullptr && buffer == bottom) return MPI_BOTTOM;
  return buffer;
}
void* c_buffer(void* buffer) { return const_cast<void*>(c_buffer(static_cast<const void*>(buffer))); }

void set_error(MPI_Fint* ierr, int rc) {
  if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);  // optional in mpi_f08
}

// The binding this library stands in front of, for MPI_Init.
template <class Function>
Function next_definition(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

void init_then_hook(const char* name, MPI_Fint* ierr) {
  using Init = void (*)(MPI_Fint*);
  const Init original = next_definition<Init>(name);  // once per process: no cache to mix names up
  if (original == nullptr) return set_error(ierr, MPI_ERR_OTHER);
  original(ierr);
  if (ierr == nullptr || *ierr == MPI_SUCCESS) matexinterpose::install_finalize_hook(true);
}

void init_thread_then_hook(const char* name, MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  using Init = void (*)(MPI_Fint*, MPI_Fint*, MPI_Fint*);
  const Init original = next_definition<Init>(name);
  if (original == nullptr) return set_error(ierr, MPI_ERR_OTHER);
  original(required, provided, ierr);
  if (ierr == nullptr || *ierr == MPI_SUCCESS) matexinterpose::install_finalize_hook(true);
}

void allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* comm,
               MPI_Fint* ierr) {
  set_error(ierr, MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, PMPI_Type_f2c(*type),
                                PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

void reduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* type, MPI_Fint* op, MPI_Fint* root,
            MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Reduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, PMPI_Type_f2c(*type), PMPI_Op_f2c(*op),
                             *root, PMPI_Comm_f2c(*comm)));
}

void bcast(void* buffer, MPI_Fint* count, MPI_Fint* type, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Bcast(c_buffer(buffer), *count, PMPI_Type_f2c(*type), *root, PMPI_Comm_f2c(*comm)));
}

void allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
               MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Allgather(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), c_buffer(recvbuf),
                                *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

void allgatherv(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcounts,
                MPI_Fint* displs, MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Allgatherv(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), c_buffer(recvbuf),
                                 recvcounts, displs, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

void reduce_scatter_block(void* sendbuf, void* recvbuf, MPI_Fint* recvcount, MPI_Fint* type, MPI_Fint* op,
                          MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount, PMPI_Type_f2c(*type),
                                           PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

void reduce_scatter(void* sendbuf, void* recvbuf, MPI_Fint* recvcounts, MPI_Fint* type, MPI_Fint* op,
                    MPI_Fint* comm, MPI_Fint* ierr) {
  set_error(ierr, MPI_Reduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), recvcounts, PMPI_Type_f2c(*type),
                                     PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

void barrier(MPI_Fint* comm, MPI_Fint* ierr) { set_error(ierr, MPI_Barrier(PMPI_Comm_f2c(*comm))); }

}  // namespace

// One definition per binding name; mpi_f08's handle types hold one integer,
// so their functions take the same arguments.
#define MATEX_FORTRAN_ENTRY(name, body_function, params, args) \
  extern "C" void mpi_##name##_ params { body_function args; } \
  extern "C" void mpi_##name##_f08_ params { body_function args; }

MATEX_FORTRAN_ENTRY(allreduce, allreduce,
                    (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
                    (s, r, n, t, o, c, e))
MATEX_FORTRAN_ENTRY(reduce, reduce,
                    (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* root, MPI_Fint* c,
                     MPI_Fint* e),
                    (s, r, n, t, o, root, c, e))
MATEX_FORTRAN_ENTRY(bcast, bcast, (void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* root, MPI_Fint* c, MPI_Fint* e),
                    (b, n, t, root, c, e))
MATEX_FORTRAN_ENTRY(allgather, allgather,
                    (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c,
                     MPI_Fint* e),
                    (s, sn, st, r, rn, rt, c, e))
MATEX_FORTRAN_ENTRY(allgatherv, allgatherv,
                    (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* d, MPI_Fint* rt,
                     MPI_Fint* c, MPI_Fint* e),
                    (s, sn, st, r, rn, d, rt, c, e))
MATEX_FORTRAN_ENTRY(reduce_scatter_block, reduce_scatter_block,
                    (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
                    (s, r, n, t, o, c, e))
MATEX_FORTRAN_ENTRY(reduce_scatter, reduce_scatter,
                    (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e),
                    (s, r, n, t, o, c, e))
MATEX_FORTRAN_ENTRY(barrier, barrier, (MPI_Fint* c, MPI_Fint* e), (c, e))

extern "C" void mpi_init_(MPI_Fint* ierr) { init_then_hook("mpi_init_", ierr); }
extern "C" void mpi_init_f08_(MPI_Fint* ierr) { init_then_hook("mpi_init_f08_", ierr); }
extern "C" void mpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  init_thread_then_hook("mpi_init_thread_", required, provided, ierr);
}
extern "C" void mpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  init_thread_then_hook("mpi_init_thread_f08_", required, provided, ierr);
}
