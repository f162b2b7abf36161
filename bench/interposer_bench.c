/* interposer_bench.c - MPI_Allreduce as an unmodified MPI program sees it,
 * timed two ways in the same run, alternating call by call:
 *   MPI_Allreduce   through whatever the program links (libmatexcomm_mpi.so
 *                   when preloaded: run it with matexrun), and
 *   PMPI_Allreduce  the MPI library's own collective.
 * float32 sums of a per-rank buffer, out of place (-i: in place), sizes from
 * -b to -e bytes by factor -f, medians of -n timed calls each, alternating
 * (each way first every other time), after -w warm-ups per
 * size (both ways), busbw as nccl-tests counts it (2(p-1)/p x size / time).
 * The last call of each size is checked against the closed-form sum.
 *
 *   matexrun -np 2 build/bin/matex-interposer-bench -b 4 -e 256M -f 4 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* text) {
  char* end = NULL;
  double value = strtod(text, &end);
  if (*end == 'K' || *end == 'k') value *= 1024;
  if (*end == 'M' || *end == 'm') value *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') value *= 1024.0 * 1024 * 1024;
  return (size_t)value;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

typedef int (*AllreduceFn)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

/* One call of fn, started together on every rank: the slowest rank's seconds. */
static double time_one(AllreduceFn fn, const float* send, float* recv, int count, int in_place) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  fn(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double elapsed = MPI_Wtime() - start;
  double slowest = 0;
  PMPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Medians of n calls of each, alternating call by call so that both see the
 * same conditions (caches, clock, neighbours); w warm-up pairs first. */
static void time_both(const float* send, float* recv, int count, int in_place, int n, int w, double* ours,
                      double* plain, double* median_ours, double* median_plain) {
  for (int i = 0; i < w + n; ++i) {
    /* Each goes first every other time: the first call after a pause pays more. */
    double a = 0, b = 0;
    if (i % 2 == 0) {
      a = time_one((AllreduceFn)MPI_Allreduce, send, recv, count, in_place);
      b = time_one((AllreduceFn)PMPI_Allreduce, send, recv, count, in_place);
    } else {
      b = time_one((AllreduceFn)PMPI_Allreduce, send, recv, count, in_place);
      a = time_one((AllreduceFn)MPI_Allreduce, send, recv, count, in_place);
    }
    if (i >= w) {
      ours[i - w] = a;
      plain[i - w] = b;
    }
  }
  qsort(ours, (size_t)n, sizeof(double), by_value);
  qsort(plain, (size_t)n, sizeof(double), by_value);
  *median_ours = ours[n / 2];
  *median_plain = plain[n / 2];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  size_t begin = 4, end = 64 << 20, factor = 4;
  int n = 50, w = 10, in_place = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-b") && i + 1 < argc) begin = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-e") && i + 1 < argc) end = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-f") && i + 1 < argc) factor = parse_size(argv[++i]);
    else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-w") && i + 1 < argc) w = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-i")) in_place = 1;
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (n < 1 || factor < 2 || begin < 4) {
    if (rank == 0) fprintf(stderr, "usage: matex-interposer-bench [-b SIZE] [-e SIZE] [-f N>=2] [-n N>=1] [-w N] [-i]\n");
    MPI_Finalize();
    return 2;
  }
  const size_t max_count = end / sizeof(float) + 1;
  float* send = malloc(max_count * sizeof(float));
  float* recv = malloc(max_count * sizeof(float));
  double* samples = NULL;
  double* samples_plain = NULL;
  int wrong = 0;
  if (rank == 0) {
    printf("# %d ranks, float32 sum, %s, medians of %d calls each (10x below 1 MiB), alternating, after %d warm-ups\n", size,
           in_place ? "in place" : "out of place", n, w);
    printf("# %12s %12s %12s %10s %10s %8s\n", "size (B)", "MPI_ (us)", "PMPI_ (us)", "busbw", "PMPI busbw",
           "speedup");
  }
  for (size_t bytes = begin; bytes <= end; bytes *= factor) {
    const int count = (int)(bytes / sizeof(float));
    int calls = n;
    if (bytes < (1 << 20)) calls = n * 10;  /* microseconds: more samples */
    samples = realloc(samples, sizeof(double) * (size_t)calls);
    samples_plain = realloc(samples_plain, sizeof(double) * (size_t)calls);
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)((rank + i) % 8);
    double ours = 0, plain = 0;
    time_both(send, recv, count, in_place, calls, w, samples, samples_plain, &ours, &plain);
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)((rank + i) % 8);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < size; ++r) expected += (float)((r + i) % 8);
      wrong += recv[i] != expected;
    }
    const double bus = 2.0 * (size - 1) / size * (double)bytes;
    if (rank == 0) {
      printf("  %12zu %12.2f %12.2f %10.2f %10.2f %8.2f\n", bytes, ours * 1e6, plain * 1e6,
             size > 1 ? bus / ours / 1e9 : 0.0, size > 1 ? bus / plain / 1e9 : 0.0, plain / ours);
    }
  }
  int all_wrong = 0;
  PMPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("# wrong elements: %d\n", all_wrong);
  free(send);
  free(recv);
  free(samples);
  free(samples_plain);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
