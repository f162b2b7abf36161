/* interposer_collectives.c - every blocking collective the interposer serves,
 * over every predefined datatype it maps, with every op MPI allows for it, out
 * of place and in place, at edge counts (0, 1, a prime, sizes that are not a
 * multiple of the rank count, and large ones for the bandwidth algorithms).
 *
 * References are independent of MPI: each element's value is a closed-form
 * function of (rank, index), small enough that every sum and product is exact
 * in every type, and the expected result is computed here in 64-bit integers
 * or doubles, stored through the same C type and compared byte for byte.
 * Floating results of inexact sums must also be bit-identical on every rank
 * (checked against rank 0's bytes, fetched with PMPI). */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef enum { kSigned, kUnsigned, kFloating, kComplex, kBool, kByte } Kind;

typedef struct {
  const char* name;
  MPI_Datatype type;
  Kind kind;
  size_t size;  /* bytes of one element */
} Type;

static int g_rank, g_size;

/* The value rank r holds at index i for an op: products stay within 2^4,
 * bitwise inputs use 7 bits, sums of 4 ranks stay below 2^5. */
static int64_t value(MPI_Op op, int r, size_t i) {
  if (op == MPI_PROD) return 1 + (int64_t)((r + i) % 2);
  if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return (int64_t)((r * 37 + i * 11) & 0x7f);
  if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return (int64_t)((r + i / 3) % 2);
  return (int64_t)((r * 3 + i) % 5) - (r % 2);  /* negative values for signed types where r is odd */
}

static int64_t combine(MPI_Op op, int64_t a, int64_t b) {
  if (op == MPI_SUM) return a + b;
  if (op == MPI_PROD) return a * b;
  if (op == MPI_MIN) return a < b ? a : b;
  if (op == MPI_MAX) return a > b ? a : b;
  if (op == MPI_BAND) return a & b;
  if (op == MPI_BOR) return a | b;
  if (op == MPI_BXOR) return a ^ b;
  if (op == MPI_LAND) return a && b;
  if (op == MPI_LOR) return a || b;
  return (a != 0) != (b != 0); /* MPI_LXOR */
}

/* Writes logical value v as element i of a buffer of type t (unsigned types
 * take |v|; a complex element holds (v, v + 1)). */
static void store(const Type* t, void* buffer, size_t i, int64_t v) {
  char* at = (char*)buffer + i * t->size;
  if (t->kind == kUnsigned || t->kind == kByte) v = v < 0 ? -v : v;
  switch (t->kind) {
    case kFloating:
      if (t->size == 4) { float f = (float)v; memcpy(at, &f, 4); }
      else { double d = (double)v; memcpy(at, &d, 8); }
      return;
    case kComplex:
      if (t->size == 8) { float parts[2] = {(float)v, (float)(v + 1)}; memcpy(at, parts, 8); }
      else { double parts[2] = {(double)v, (double)(v + 1)}; memcpy(at, parts, 16); }
      return;
    case kBool: { bool b = v != 0; memcpy(at, &b, 1); return; }
    default:
      switch (t->size) {
        case 1: { int8_t x = (int8_t)v; memcpy(at, &x, 1); return; }
        case 2: { int16_t x = (int16_t)v; memcpy(at, &x, 2); return; }
        case 4: { int32_t x = (int32_t)v; memcpy(at, &x, 4); return; }
        default: { int64_t x = v; memcpy(at, &x, 8); return; }
      }
  }
}

/* The expected reduction of element i, written as one element at `out`.
 * Unsigned inputs are |value|, so the reference folds those; a complex sum
 * folds the real parts, and the imaginary parts are each one more. */
static void expect_element(const Type* t, MPI_Op op, size_t i, void* out) {
  int64_t acc = 0;
  for (int r = 0; r < g_size; ++r) {
    int64_t v = value(op, r, i);
    if (t->kind == kUnsigned || t->kind == kByte) v = v < 0 ? -v : v;
    if (t->kind == kBool) v = v != 0;
    acc = r == 0 ? v : combine(op, acc, v);
  }
  if (t->kind == kComplex) {
    if (t->size == 8) { float parts[2] = {(float)acc, (float)(acc + g_size)}; memcpy(out, parts, 8); }
    else { double parts[2] = {(double)acc, (double)(acc + g_size)}; memcpy(out, parts, 16); }
    return;
  }
  store(t, out, 0, acc);
}

static const char* op_name(MPI_Op op) {
  if (op == MPI_SUM) return "SUM";
  if (op == MPI_PROD) return "PROD";
  if (op == MPI_MIN) return "MIN";
  if (op == MPI_MAX) return "MAX";
  if (op == MPI_BAND) return "BAND";
  if (op == MPI_BOR) return "BOR";
  if (op == MPI_BXOR) return "BXOR";
  if (op == MPI_LAND) return "LAND";
  if (op == MPI_LOR) return "LOR";
  return "LXOR";
}

static void fill(const Type* t, MPI_Op op, void* buffer, size_t count, int rank, size_t first) {
  for (size_t i = 0; i < count; ++i) store(t, buffer, i, value(op, rank, first + i));
}

/* Compares count elements of `got` with the reference for elements first.. */
static void compare(const Type* t, MPI_Op op, const void* got, size_t count, size_t first, const char* what) {
  for (size_t i = 0; i < count; ++i) {
    char expected[16];
    expect_element(t, op, first + i, expected);
    if (memcmp(expected, (const char*)got + i * t->size, t->size) != 0) {
      check_fail("%s %s %s count %zu: element %zu differs from the reference", what, t->name, op_name(op), count,
                 first + i);
      return;
    }
  }
  check_count();
}

static const Type kTypes[] = {
    {"MPI_FLOAT", MPI_FLOAT, kFloating, sizeof(float)},
    {"MPI_DOUBLE", MPI_DOUBLE, kFloating, sizeof(double)},
    {"MPI_INT", MPI_INT, kSigned, sizeof(int)},
    {"MPI_LONG", MPI_LONG, kSigned, sizeof(long)},
    {"MPI_LONG_LONG", MPI_LONG_LONG, kSigned, sizeof(long long)},
    {"MPI_SHORT", MPI_SHORT, kSigned, sizeof(short)},
    {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, kSigned, 1},
    {"MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, kUnsigned, 1},
    {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, kUnsigned, sizeof(unsigned short)},
    {"MPI_UNSIGNED", MPI_UNSIGNED, kUnsigned, sizeof(unsigned)},
    {"MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, kUnsigned, sizeof(unsigned long)},
    {"MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, kUnsigned, sizeof(unsigned long long)},
    {"MPI_INT8_T", MPI_INT8_T, kSigned, 1},
    {"MPI_INT16_T", MPI_INT16_T, kSigned, 2},
    {"MPI_INT32_T", MPI_INT32_T, kSigned, 4},
    {"MPI_INT64_T", MPI_INT64_T, kSigned, 8},
    {"MPI_UINT8_T", MPI_UINT8_T, kUnsigned, 1},
    {"MPI_UINT16_T", MPI_UINT16_T, kUnsigned, 2},
    {"MPI_UINT32_T", MPI_UINT32_T, kUnsigned, 4},
    {"MPI_UINT64_T", MPI_UINT64_T, kUnsigned, 8},
    {"MPI_AINT", MPI_AINT, kSigned, sizeof(MPI_Aint)},
    {"MPI_C_BOOL", MPI_C_BOOL, kBool, sizeof(bool)},
    {"MPI_BYTE", MPI_BYTE, kByte, 1},
    {"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, kComplex, 2 * sizeof(float)},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, kComplex, 2 * sizeof(double)},
    {"MPI_REAL", MPI_REAL, kFloating, 4},
    {"MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, kFloating, 8},
    {"MPI_INTEGER", MPI_INTEGER, kSigned, 4},
};

/* The ops MPI defines for a kind (and that the interposer maps). */
static int ops_of(Kind kind, MPI_Op* ops) {
  int n = 0;
  if (kind == kSigned || kind == kUnsigned || kind == kFloating) {
    ops[n++] = MPI_SUM; ops[n++] = MPI_PROD; ops[n++] = MPI_MIN; ops[n++] = MPI_MAX;
  }
  if (kind == kSigned || kind == kUnsigned || kind == kByte) {
    ops[n++] = MPI_BAND; ops[n++] = MPI_BOR; ops[n++] = MPI_BXOR;
  }
  if (kind == kBool) { ops[n++] = MPI_LAND; ops[n++] = MPI_LOR; ops[n++] = MPI_LXOR; }
  if (kind == kComplex) ops[n++] = MPI_SUM;
  return n;
}

static int ok(int rc, const char* what) {
  check(rc == MPI_SUCCESS, "%s returned MPI error %d", what, rc);
  return rc == MPI_SUCCESS;
}

static void test_allreduce(const Type* t, MPI_Op op, size_t count) {
  char* send = malloc(count * t->size + 1);
  char* recv = malloc(count * t->size + 1);
  fill(t, op, send, count, g_rank, 0);
  memset(recv, 0x5a, count * t->size);
  if (ok(MPI_Allreduce(send, recv, (int)count, t->type, op, MPI_COMM_WORLD), "MPI_Allreduce")) {
    compare(t, op, recv, count, 0, "MPI_Allreduce");
  }
  fill(t, op, recv, count, g_rank, 0);
  if (ok(MPI_Allreduce(MPI_IN_PLACE, recv, (int)count, t->type, op, MPI_COMM_WORLD), "MPI_Allreduce in place")) {
    compare(t, op, recv, count, 0, "MPI_Allreduce in place");
  }
  free(send);
  free(recv);
}

static void test_reduce(const Type* t, MPI_Op op, size_t count, int root) {
  char* send = malloc(count * t->size + 1);
  char* recv = malloc(count * t->size + 1);
  fill(t, op, send, count, g_rank, 0);
  memset(recv, 0x5a, count * t->size);
  if (ok(MPI_Reduce(send, g_rank == root ? recv : NULL, (int)count, t->type, op, root, MPI_COMM_WORLD),
         "MPI_Reduce") && g_rank == root) {
    compare(t, op, recv, count, 0, "MPI_Reduce");
  }
  fill(t, op, recv, count, g_rank, 0);
  const void* in = g_rank == root ? MPI_IN_PLACE : recv;
  if (ok(MPI_Reduce(in, g_rank == root ? recv : NULL, (int)count, t->type, op, root, MPI_COMM_WORLD),
         "MPI_Reduce in place") && g_rank == root) {
    compare(t, op, recv, count, 0, "MPI_Reduce in place at the root");
  }
  free(send);
  free(recv);
}

/* Equal blocks of `block` elements, then blocks of r % 3 * block elements
 * (some empty, totals not a multiple of the rank count). */
static void test_reduce_scatter(const Type* t, MPI_Op op, size_t block) {
  const size_t total = block * (size_t)g_size;
  char* send = malloc(total * t->size + 1);
  char* recv = malloc(total * t->size + 1);
  fill(t, op, send, total, g_rank, 0);
  if (ok(MPI_Reduce_scatter_block(send, recv, (int)block, t->type, op, MPI_COMM_WORLD), "MPI_Reduce_scatter_block")) {
    compare(t, op, recv, block, block * (size_t)g_rank, "MPI_Reduce_scatter_block");
  }
  fill(t, op, recv, total, g_rank, 0);
  if (ok(MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, (int)block, t->type, op, MPI_COMM_WORLD),
         "MPI_Reduce_scatter_block in place")) {
    compare(t, op, recv, block, block * (size_t)g_rank, "MPI_Reduce_scatter_block in place");
  }
  int* counts = malloc(sizeof(int) * (size_t)g_size);
  size_t uneven = 0, mine = 0;
  for (int r = 0; r < g_size; ++r) {
    counts[r] = (int)((size_t)(r % 3) * block + (r == g_size - 1 ? 1 : 0));
    if (r < g_rank) mine += (size_t)counts[r];
    uneven += (size_t)counts[r];
  }
  char* big = malloc(uneven * t->size + 1);
  fill(t, op, big, uneven, g_rank, 0);
  if (ok(MPI_Reduce_scatter(big, recv, counts, t->type, op, MPI_COMM_WORLD), "MPI_Reduce_scatter")) {
    compare(t, op, recv, (size_t)counts[g_rank], mine, "MPI_Reduce_scatter");
  }
  fill(t, op, big, uneven, g_rank, 0);
  if (ok(MPI_Reduce_scatter(MPI_IN_PLACE, big, counts, t->type, op, MPI_COMM_WORLD), "MPI_Reduce_scatter in place")) {
    compare(t, op, big, (size_t)counts[g_rank], mine, "MPI_Reduce_scatter in place");
    /* What MPI leaves beyond the result block is not defined (Open MPI itself
     * overwrites it at some sizes); the interposer keeps it, which mpi4py's
     * test_cco_buf checks at its sizes. */
  }
  free(big);
  free(counts);
  free(send);
  free(recv);
}

/* Floating sums of inexact values: MPI requires the same result on every rank. */
static void test_identical_on_every_rank(size_t count) {
  double* data = malloc(count * sizeof(double));
  float* single = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    data[i] = 1.0 / (double)(g_rank + 3) + (double)i * 1e-7;
    single[i] = (float)data[i] * 1.1f;
  }
  MPI_Allreduce(MPI_IN_PLACE, data, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, single, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double* root_data = malloc(count * sizeof(double));
  float* root_single = malloc(count * sizeof(float));
  memcpy(root_data, data, count * sizeof(double));
  memcpy(root_single, single, count * sizeof(float));
  PMPI_Bcast(root_data, (int)count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  PMPI_Bcast(root_single, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  check(memcmp(root_data, data, count * sizeof(double)) == 0 && memcmp(root_single, single, count * sizeof(float)) == 0,
        "MPI_Allreduce of %zu inexact floating values: rank %d's bits differ from rank 0's", count, g_rank);
  free(data);
  free(single);
  free(root_data);
  free(root_single);
}

static unsigned char pattern(int rank, size_t i) { return (unsigned char)(rank * 131 + i * 7 + 1); }

static void test_bcast(size_t bytes, int root) {
  unsigned char* buffer = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; ++i) buffer[i] = g_rank == root ? pattern(root, i) : 0;
  /* As doubles where the size allows, else as bytes: the type must not matter. */
  int as_doubles = bytes % sizeof(double) == 0 && bytes > 0;
  int rc = as_doubles ? MPI_Bcast(buffer, (int)(bytes / sizeof(double)), MPI_DOUBLE, root, MPI_COMM_WORLD)
                      : MPI_Bcast(buffer, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
  if (ok(rc, "MPI_Bcast")) {
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += buffer[i] != pattern(root, i);
    check(wrong == 0, "MPI_Bcast of %zu bytes from root %d: %zu bytes wrong", bytes, root, wrong);
  }
  free(buffer);
}

static void test_allgather(size_t count) {
  int* send = malloc(count * sizeof(int) + 1);
  int* recv = malloc(count * (size_t)g_size * sizeof(int) + 1);
  for (size_t i = 0; i < count; ++i) send[i] = g_rank * 100000 + (int)i;
  for (int pass = 0; pass < 2; ++pass) {
    const int in_place = pass == 1;
    for (size_t i = 0; i < count * (size_t)g_size; ++i) recv[i] = -1;
    if (in_place) memcpy(recv + count * (size_t)g_rank, send, count * sizeof(int));
    int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)count, MPI_INT, recv, (int)count, MPI_INT,
                           MPI_COMM_WORLD);
    if (!ok(rc, "MPI_Allgather")) continue;
    size_t wrong = 0;
    for (int r = 0; r < g_size; ++r) {
      for (size_t i = 0; i < count; ++i) wrong += recv[(size_t)r * count + i] != r * 100000 + (int)i;
    }
    check(wrong == 0, "MPI_Allgather%s of %zu ints: %zu wrong", in_place ? " in place" : "", count, wrong);
  }
  free(send);
  free(recv);
}

/* Rank r contributes (r * 5 + base) % 7 doubles, placed in reverse rank order
 * with a gap of 3 elements between blocks. */
static void test_allgatherv(size_t base) {
  int* counts = malloc(sizeof(int) * (size_t)g_size);
  int* displs = malloc(sizeof(int) * (size_t)g_size);
  int offset = 0;
  for (int r = g_size - 1; r >= 0; --r) {
    counts[r] = (int)((r * 5 + base) % 7);
    displs[r] = offset;
    offset += counts[r] + 3;
  }
  double* recv = malloc(sizeof(double) * (size_t)offset + 1);
  double* send = malloc(sizeof(double) * (size_t)counts[g_rank] + 1);
  for (int i = 0; i < counts[g_rank]; ++i) send[i] = g_rank * 1000.0 + i;
  for (int pass = 0; pass < 2; ++pass) {
    const int in_place = pass == 1;
    for (int i = 0; i < offset; ++i) recv[i] = -1.0;
    if (in_place) memcpy(recv + displs[g_rank], send, sizeof(double) * (size_t)counts[g_rank]);
    int rc = MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, counts[g_rank], MPI_DOUBLE, recv, counts, displs,
                            MPI_DOUBLE, MPI_COMM_WORLD);
    if (!ok(rc, "MPI_Allgatherv")) continue;
    size_t wrong = 0;
    for (int r = 0; r < g_size; ++r) {
      for (int i = 0; i < counts[r]; ++i) wrong += recv[displs[r] + i] != r * 1000.0 + i;
      for (int i = 0; i < 3; ++i) wrong += recv[displs[r] + counts[r] + i] != -1.0;  /* gaps untouched */
    }
    check(wrong == 0, "MPI_Allgatherv%s (base %zu): %zu elements wrong", in_place ? " in place" : "", base, wrong);
  }
  free(counts);
  free(displs);
  free(recv);
  free(send);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const size_t counts[] = {0, 1, 13, 1000};
  for (size_t t = 0; t < sizeof kTypes / sizeof kTypes[0]; ++t) {
    MPI_Op ops[8];
    const int n = ops_of(kTypes[t].kind, ops);
    for (int o = 0; o < n; ++o) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        test_allreduce(&kTypes[t], ops[o], counts[c]);
        test_reduce(&kTypes[t], ops[o], counts[c], 0);
        test_reduce(&kTypes[t], ops[o], counts[c], g_size - 1);
        test_reduce_scatter(&kTypes[t], ops[o], counts[c]);
      }
    }
  }
  /* Sizes for the bandwidth algorithms (shared memory pipelines, cross-memory attach). */
  const size_t large[] = {65537, (size_t)1 << 18, ((size_t)1 << 20) + 3};
  for (size_t c = 0; c < 3; ++c) {
    test_allreduce(&kTypes[0], MPI_SUM, large[c]);
    test_allreduce(&kTypes[2], MPI_MAX, large[c]);
    test_reduce(&kTypes[1], MPI_SUM, large[c], g_size - 1);
    test_reduce_scatter(&kTypes[0], MPI_SUM, large[c] / 4);
    test_identical_on_every_rank(large[c]);
  }
  test_identical_on_every_rank(1000);
  const size_t bytes[] = {0, 1, 13, 4096, 65536 + 8, (size_t)1 << 22};
  for (size_t b = 0; b < sizeof bytes / sizeof bytes[0]; ++b) {
    for (int root = 0; root < g_size; ++root) test_bcast(bytes[b], root);
  }
  const size_t gathers[] = {0, 1, 13, 1000, 100003};
  for (size_t g = 0; g < sizeof gathers / sizeof gathers[0]; ++g) test_allgather(gathers[g]);
  for (size_t base = 0; base < 7; ++base) test_allgatherv(base);
  check(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Barrier failed");
  const int status = check_verdict("interposer_collectives");
  MPI_Finalize();
  return status;
}
