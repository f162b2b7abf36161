/* interposer_datatypes.c - data movement with derived datatypes, which the
 * interposer serves as bytes: only type signatures must match across ranks,
 * so ranks may describe the same data differently, and a rank whose layout
 * is not one contiguous run packs it locally. Also MPI_BOTTOM with absolute
 * addresses, and reductions on derived types (handed to MPI, still correct).
 * Every result is checked against values computed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int g_rank, g_size;

static int value_at(int owner, int i) { return owner * 100000 + i * 3 + 1; }

/* Root sends n ints as MPI_INT; the others receive them through a strided
 * vector type (every second int) or a contiguous derived type. */
static void bcast_mixed_types(int n, int root) {
  MPI_Datatype strided, blocks;
  MPI_Type_vector(n, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  MPI_Type_contiguous(n, MPI_INT, &blocks);
  MPI_Type_commit(&blocks);
  int* data = calloc((size_t)(2 * n + 1), sizeof(int));
  int rc;
  if (g_rank == root) {
    for (int i = 0; i < n; ++i) data[i] = value_at(root, i);
    rc = MPI_Bcast(data, n, MPI_INT, root, MPI_COMM_WORLD);
  } else if (g_rank % 2 == 1) {
    for (int i = 0; i < 2 * n + 1; ++i) data[i] = -7;
    rc = MPI_Bcast(data, 1, strided, root, MPI_COMM_WORLD);
  } else {
    rc = MPI_Bcast(data, 1, blocks, root, MPI_COMM_WORLD);
  }
  check(rc == MPI_SUCCESS, "MPI_Bcast with mixed datatypes returned %d", rc);
  long wrong = 0;
  if (g_rank != root && g_rank % 2 == 1) {
    for (int i = 0; i < n; ++i) wrong += data[2 * i] != value_at(root, i);
    for (int i = 0; i + 1 < n; ++i) wrong += data[2 * i + 1] != -7;  /* the holes stay as they were */
  } else if (g_rank != root) {
    for (int i = 0; i < n; ++i) wrong += data[i] != value_at(root, i);
  }
  check(wrong == 0, "MPI_Bcast of %d ints from root %d through a derived type: %ld wrong", n, root, wrong);
  free(data);
  MPI_Type_free(&strided);
  MPI_Type_free(&blocks);
}

/* Two separate arrays described by absolute addresses, broadcast from MPI_BOTTOM. */
static void bcast_from_bottom(int n) {
  int* first = malloc(sizeof(int) * (size_t)n);
  double* second = malloc(sizeof(double) * (size_t)n);
  for (int i = 0; i < n; ++i) {
    first[i] = g_rank == 0 ? value_at(0, i) : 0;
    second[i] = g_rank == 0 ? value_at(0, i) * 0.5 : 0;
  }
  MPI_Aint addresses[2];
  MPI_Get_address(first, &addresses[0]);
  MPI_Get_address(second, &addresses[1]);
  int lengths[2] = {n, n};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype absolute;
  MPI_Type_create_struct(2, lengths, addresses, types, &absolute);
  MPI_Type_commit(&absolute);
  int rc = MPI_Bcast(MPI_BOTTOM, 1, absolute, 0, MPI_COMM_WORLD);
  check(rc == MPI_SUCCESS, "MPI_Bcast from MPI_BOTTOM returned %d", rc);
  long wrong = 0;
  for (int i = 0; i < n; ++i) wrong += first[i] != value_at(0, i) || second[i] != value_at(0, i) * 0.5;
  check(wrong == 0, "MPI_Bcast from MPI_BOTTOM of %d ints and %d doubles: %ld wrong", n, n, wrong);
  MPI_Type_free(&absolute);
  free(first);
  free(second);
}

/* Allgather sending contiguous ints into a receive type with a hole after
 * each int (resized to two ints), out of place and in place. */
static void allgather_into_strided(int n) {
  MPI_Datatype padded;
  MPI_Type_create_resized(MPI_INT, 0, 2 * (MPI_Aint)sizeof(int), &padded);
  MPI_Type_commit(&padded);
  int* send = malloc(sizeof(int) * (size_t)(n + 1));
  const size_t slots = 2 * (size_t)n * (size_t)g_size + 1;
  int* recv = malloc(sizeof(int) * slots);
  for (int i = 0; i < n; ++i) send[i] = value_at(g_rank, i);
  for (int pass = 0; pass < 2; ++pass) {
    const int in_place = pass == 1;
    for (size_t i = 0; i < slots; ++i) recv[i] = -7;
    if (in_place) {
      for (int i = 0; i < n; ++i) recv[2 * ((size_t)g_rank * n + i)] = value_at(g_rank, i);
    }
    int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : send, n, MPI_INT, recv, n, padded, MPI_COMM_WORLD);
    check(rc == MPI_SUCCESS, "MPI_Allgather into a strided type returned %d", rc);
    long wrong = 0;
    for (int r = 0; r < g_size; ++r) {
      for (int i = 0; i < n; ++i) {
        const size_t at = 2 * ((size_t)r * n + i);
        wrong += recv[at] != value_at(r, i) || recv[at + 1] != -7;
      }
    }
    check(wrong == 0, "MPI_Allgather%s of %d ints into a strided type: %ld wrong", in_place ? " in place" : "", n,
          wrong);
  }
  MPI_Type_free(&padded);
  free(send);
  free(recv);
}

/* Allgatherv whose senders use a vector type (every third double) and whose
 * receive side is plain doubles: the signature is what must match. */
static void allgatherv_from_strided(int base) {
  int* counts = malloc(sizeof(int) * (size_t)g_size);
  int* displs = malloc(sizeof(int) * (size_t)g_size);
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    counts[r] = (r + base) % 4 * 3 + (r == 0);
    displs[r] = total;
    total += counts[r] + 1;
  }
  const int mine = counts[g_rank];
  MPI_Datatype every_third;
  MPI_Type_vector(mine > 0 ? mine : 1, 1, 3, MPI_DOUBLE, &every_third);
  MPI_Type_commit(&every_third);
  double* send = malloc(sizeof(double) * (size_t)(3 * mine + 1));
  for (int i = 0; i < 3 * mine + 1; ++i) send[i] = i % 3 == 0 ? value_at(g_rank, i / 3) : -1.0;
  double* recv = malloc(sizeof(double) * (size_t)(total + 1));
  for (int i = 0; i <= total; ++i) recv[i] = -7.0;
  int rc = MPI_Allgatherv(send, mine > 0 ? 1 : 0, every_third, recv, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
  check(rc == MPI_SUCCESS, "MPI_Allgatherv from a vector type returned %d", rc);
  long wrong = 0;
  for (int r = 0; r < g_size; ++r) {
    for (int i = 0; i < counts[r]; ++i) wrong += recv[displs[r] + i] != value_at(r, i);
    wrong += recv[displs[r] + counts[r]] != -7.0;
  }
  check(wrong == 0, "MPI_Allgatherv from a vector type (base %d): %ld wrong", base, wrong);
  MPI_Type_free(&every_third);
  free(counts);
  free(displs);
  free(send);
  free(recv);
}

/* The root sends 4n doubles in order; the others receive them through an
 * indexed type that lists them out of memory order (a transpose of n x 4):
 * dense, but not in memory order, so the bytes must follow the signature. */
static void bcast_into_permuted_type(int n) {
  int* lengths = malloc(sizeof(int) * (size_t)(4 * n));
  int* places = malloc(sizeof(int) * (size_t)(4 * n));
  for (int k = 0; k < 4 * n; ++k) {
    lengths[k] = 1;
    places[k] = (k % 4) * n + k / 4;  /* signature element k lands at places[k] */
  }
  MPI_Datatype transposed;
  MPI_Type_indexed(4 * n, lengths, places, MPI_DOUBLE, &transposed);
  MPI_Type_commit(&transposed);
  double* data = malloc(sizeof(double) * (size_t)(4 * n));
  int rc;
  if (g_rank == 0) {
    for (int k = 0; k < 4 * n; ++k) data[k] = value_at(0, k);
    rc = MPI_Bcast(data, 4 * n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  } else {
    for (int k = 0; k < 4 * n; ++k) data[k] = -7;
    rc = MPI_Bcast(data, 1, transposed, 0, MPI_COMM_WORLD);
  }
  check(rc == MPI_SUCCESS, "MPI_Bcast into a permuted type returned %d", rc);
  long wrong = 0;
  for (int k = 0; k < 4 * n && g_rank != 0; ++k) wrong += data[places[k]] != value_at(0, k);
  check(wrong == 0, "MPI_Bcast of %d doubles into a permuted indexed type: %ld wrong", 4 * n, wrong);
  MPI_Type_free(&transposed);
  free(lengths);
  free(places);
  free(data);
}

/* Sums pairs of doubles (a user op: MPI's predefined ops take predefined
 * types only). */
static void add_pairs(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < 2 * *len; ++i) ((double*)inout)[i] += ((double*)in)[i];
}

/* A reduction on a derived type goes to MPI (the report says "datatype"),
 * and its result is still right. */
static void allreduce_of_derived_type(void) {
  MPI_Datatype pairs;
  MPI_Type_contiguous(2, MPI_DOUBLE, &pairs);
  MPI_Type_commit(&pairs);
  MPI_Op add;
  MPI_Op_create(add_pairs, 1, &add);
  double data[8];
  for (int i = 0; i < 8; ++i) data[i] = g_rank + i;
  int rc = MPI_Allreduce(MPI_IN_PLACE, data, 4, pairs, add, MPI_COMM_WORLD);
  check(rc == MPI_SUCCESS, "MPI_Allreduce of a derived type returned %d", rc);
  long wrong = 0;
  for (int i = 0; i < 8; ++i) wrong += data[i] != g_size * (g_size - 1) / 2.0 + g_size * i;
  check(wrong == 0, "MPI_Allreduce of a contiguous derived type: %ld wrong", wrong);
  MPI_Op_free(&add);
  MPI_Type_free(&pairs);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const int sizes[] = {1, 13, 1000, 300007};
  for (int s = 0; s < 4; ++s) {
    for (int root = 0; root < g_size; ++root) bcast_mixed_types(sizes[s], root);
    bcast_from_bottom(sizes[s]);
    allgather_into_strided(sizes[s]);
  }
  for (int base = 0; base < 5; ++base) allgatherv_from_strided(base);
  bcast_into_permuted_type(1);
  bcast_into_permuted_type(1000);
  allreduce_of_derived_type();
  const int status = check_verdict("interposer_datatypes");
  MPI_Finalize();
  return status;
}
