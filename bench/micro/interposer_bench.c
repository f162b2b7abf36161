/* interposer_bench.c - MPI_Allreduce as an unmodified MPI program sees it,
 * timed three ways in the same run, interleaved call by call:
 *   MPI_Allreduce    through whatever the program links (libmatexcomm_mpi.so
 *                    when preloaded: run it with matexrun),
 *   PMPI_Allreduce   the MPI library's own collective, and
 *   matex_allreduce  libmatexcomm called directly, as matex-bench calls it,
 *                    on its own communicator over MPI_COMM_WORLD: the
 *                    interposer's cost is the gap between the first and this.
 * float32 sums of a per-rank buffer, out of place (-i: in place), sizes from
 * -b to -e bytes by factor -f, medians of -n timed calls each, the three
 * interleaved (time_all), after -w warm-ups per size, busbw as nccl-tests
 * counts it (2(p-1)/p x size / time).
 * The last call of each size is checked against the closed-form sum.
 *
 *   matexrun -np 2 build/bin/matex-interposer-bench -b 4 -e 256M -f 4 */
#include <matexcomm/matexcomm.h>
#include <matexcomm/matexcomm_mpi.h>
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

static matex_comm_t g_direct = NULL;  /* libmatexcomm's own communicator */

/* matex_allreduce with MPI_Allreduce's signature (float sums only). */
static int direct_allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  (void)type;
  (void)op;
  (void)comm;
  return matex_allreduce(g_direct, send == MPI_IN_PLACE ? MATEX_IN_PLACE : send, recv, (size_t)count, MATEX_FLOAT32,
                         MATEX_SUM) == MATEX_SUCCESS
             ? MPI_SUCCESS
             : MPI_ERR_OTHER;
}

typedef int (*AllreduceFn)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
enum { kWays = 3 };  /* MPI_, PMPI_, matex_ */

/* One call of fn, started together on every rank: the slowest rank's seconds. */
static double time_one(AllreduceFn fn, const float* send, float* recv, int count, int in_place) {
  PMPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  int status = fn(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double elapsed = MPI_Wtime() - start;
  if (status != MPI_SUCCESS) {
    fprintf(stderr, "matex-interposer-bench: allreduce failed: %s\n",
            fn == direct_allreduce ? matex_last_error() : "MPI error (see MPI's message)");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double slowest = 0;
  PMPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Medians of n calls of each way, interleaved call by call so that all see
 * the same conditions (caches, clock, neighbours). The calls follow the cycle
 * 0 1 2 0 2 1, in which each way comes right after each other way equally
 * often: a call that leaves the caches worse for the next one (MPI's own
 * in place walks the buffer in its own order) then burdens all three alike.
 * The first w calls of each way warm up. */
static void time_all(const float* send, float* recv, int count, int in_place, int n, int w, double* samples[kWays],
                     double median[kWays]) {
  const AllreduceFn ways[kWays] = {(AllreduceFn)MPI_Allreduce, (AllreduceFn)PMPI_Allreduce, direct_allreduce};
  static const int kCycle[6] = {0, 1, 2, 0, 2, 1};
  int done[kWays] = {0, 0, 0};
  for (int call = 0; call < kWays * (w + n); ++call) {
    const int way = kCycle[call % 6];
    const double t = time_one(ways[way], send, recv, count, in_place);
    if (done[way] >= w) samples[way][done[way] - w] = t;
    ++done[way];
  }
  for (int way = 0; way < kWays; ++way) {
    qsort(samples[way], (size_t)n, sizeof(double), by_value);
    median[way] = samples[way][n / 2];
  }
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
  if (n < 1 || w < 0 || factor < 2 || begin < 4) {
    if (rank == 0) fprintf(stderr, "usage: matex-interposer-bench [-b SIZE] [-e SIZE] [-f N>=2] [-n N>=1] [-w N] [-i]\n");
    MPI_Finalize();
    return 2;
  }
  const size_t max_count = end / sizeof(float) + 1;
  float* send = malloc(max_count * sizeof(float));
  float* recv = malloc(max_count * sizeof(float));
  if (matex_init_mpi(MPI_COMM_WORLD, &g_direct) != MATEX_SUCCESS) {
    fprintf(stderr, "matex-interposer-bench: matex_init_mpi failed: %s\n", matex_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double* samples[kWays] = {NULL, NULL, NULL};
  int wrong = 0;
  if (rank == 0) {
    printf("# %d ranks, float32 sum, %s, medians of %d calls each (10x below 1 MiB), interleaved, after %d warm-ups\n", size,
           in_place ? "in place" : "out of place", n, w);
    printf("# speedup: PMPI_'s time over MPI_'s; ours/direct: MPI_'s time over matex_'s (above 1: the interposer costs)\n");
    printf("# %12s %12s %12s %12s %11s %11s %11s %8s %11s\n", "size (B)", "MPI_ (us)", "PMPI_ (us)", "matex_ (us)",
           "busbw", "PMPI busbw", "matex busbw", "speedup", "ours/direct");
  }
  for (size_t bytes = begin; bytes <= end; bytes *= factor) {
    const int count = (int)(bytes / sizeof(float));
    int calls = n;
    if (bytes < (1 << 20)) calls = n * 10;  /* microseconds: more samples */
    for (int way = 0; way < kWays; ++way) samples[way] = realloc(samples[way], sizeof(double) * (size_t)calls);
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)((rank + i) % 8);
    double median[kWays] = {0, 0, 0};
    time_all(send, recv, count, in_place, calls, w, samples, median);
    const double ours = median[0], plain = median[1], direct = median[2];
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)((rank + i) % 8);
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i) {
      float expected = 0;
      for (int r = 0; r < size; ++r) expected += (float)((r + i) % 8);
      wrong += recv[i] != expected;
    }
    const double bus = 2.0 * (size - 1) / size * (double)bytes;
    if (rank == 0) {
      printf("  %12zu %12.2f %12.2f %12.2f %11.2f %11.2f %11.2f %8.2f %11.2f\n", bytes, ours * 1e6, plain * 1e6,
             direct * 1e6, size > 1 ? bus / ours / 1e9 : 0.0, size > 1 ? bus / plain / 1e9 : 0.0,
             size > 1 ? bus / direct / 1e9 : 0.0, plain / ours, ours / direct);
    }
  }
  int all_wrong = 0;
  PMPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("# wrong elements: %d\n", all_wrong);
  free(send);
  free(recv);
  for (int way = 0; way < kWays; ++way) free(samples[way]);
  matex_finalize(&g_direct);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
