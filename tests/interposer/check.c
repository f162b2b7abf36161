#include "check.h"

#include <stdarg.h>
#include <stdio.h>

static long g_failures = 0;
static long g_checks = 0;

static void vreport(const char* format, va_list args) {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (g_failures <= 20) {
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
  }
}

void check_fail(const char* format, ...) {
  ++g_failures;
  va_list args;
  va_start(args, format);
  vreport(format, args);
  va_end(args);
}

void check(int ok, const char* format, ...) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  va_list args;
  va_start(args, format);
  vreport(format, args);
  va_end(args);
}

void check_count(void) { ++g_checks; }

long check_failures(void) { return g_failures; }

int check_verdict(const char* name) {
  long counts[2] = {g_failures, g_checks};
  long sums[2] = {0, 0};
  PMPI_Allreduce(counts, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    if (sums[0] == 0) printf("%s: all %ld checks passed (summed over ranks)\n", name, sums[1]);
    else printf("%s: %ld of %ld checks failed (summed over ranks)\n", name, sums[0], sums[1]);
    fflush(stdout);
  }
  return sums[0] == 0 && sums[1] > 0 ? 0 : 1;
}
