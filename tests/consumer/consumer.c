/*
 * consumer.c - the smallest program a user of an installed libmatexcomm
 * writes: matex_init, an allreduce of a few floats, a check of the sum,
 * matex_finalize (which also finalizes MPI, since matex_init started it).
 * Prints "OK" on success; exits non-zero on any failure.
 */
#include <stdio.h>

#include <matexcomm/matexcomm.h>

#define COUNT 5

static int fail(const char* what, matex_status_t status) {
  fprintf(stderr, "consumer: %s failed: %s: %s\n", what, matex_status_string(status), matex_last_error());
  return 1;
}

int main(void) {
  matex_comm_t comm = NULL;
  matex_status_t status = matex_init(&comm);
  if (status != MATEX_SUCCESS) return fail("matex_init", status);

  int rank = -1, size = 0;
  matex_comm_rank(comm, &rank);
  matex_comm_size(comm, &size);

  float values[COUNT];
  for (int i = 0; i < COUNT; ++i) values[i] = (float)(i + 1) * (float)(rank + 1);
  status = matex_allreduce(comm, MATEX_IN_PLACE, values, COUNT, MATEX_FLOAT32, MATEX_SUM);
  if (status != MATEX_SUCCESS) return fail("matex_allreduce", status);

  int wrong = 0;
  const float rank_sum = (float)size * (float)(size + 1) / 2.0f; /* 1 + 2 + ... + size */
  for (int i = 0; i < COUNT; ++i) {
    const float expected = (float)(i + 1) * rank_sum;
    if (values[i] != expected) {
      fprintf(stderr, "consumer: rank %d element %d is %g, expected %g\n", rank, i, values[i], expected);
      wrong = 1;
    }
  }

  status = matex_finalize(&comm);
  if (status != MATEX_SUCCESS) return fail("matex_finalize", status);
  if (wrong) return 1;
  printf("OK rank %d of %d (matexcomm %s)\n", rank, size, matex_version_string());
  return 0;
}
