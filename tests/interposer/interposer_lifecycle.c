/* interposer_lifecycle.c - communicators created, used and freed many times
 * under the interposer: nothing may pile up.
 *
 * usage: interposer_lifecycle [cycles]   (default 10000)
 *
 * Each cycle creates a communicator in one of four ways (a dup of
 * MPI_COMM_WORLD, a split by the parity of the rank, a split with the keys in
 * reverse order, a dup of a dup), runs a served MPI_Allreduce on it (every
 * 100th cycle also an MPI_Bcast and an MPI_Allgather) whose result is known in
 * closed form, and frees it. Every 7th cycle also holds two communicators at
 * once and frees the older one first. The interposer builds libmatexcomm's
 * state (private communicators, a shared-memory segment) at the first call on
 * each communicator and must drop all of it when the communicator is freed.
 *
 * Measured on every rank after a warm-up and again after the loop:
 * - open file descriptors (/proc/self/fd): must be equal;
 * - mappings of /dev/shm/matex-* segments (/proc/self/maps): must be equal;
 * - the Fortran index (MPI_Comm_c2f) of a fresh dup of MPI_COMM_WORLD: Open
 *   MPI hands out the lowest free slot, so leaked communicators (the user's
 *   or the interposer's private ones) make it grow; at most kC2fSlack;
 * - VmRSS: must grow by less than kRssFixedKiB + kRssBytesPerCycle per
 *   cycle (see there: libmatexcomm keeps ~50 bytes per handle on purpose).
 * And the interposer's own communicators never carry the program's
 * attributes: a copy callback on MPI_COMM_WORLD runs exactly once per
 * MPI_Comm_dup the program makes of a communicator carrying the attribute. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* How far the c2f index of a fresh communicator may move between the two
 * measurements without a leak: a few slots, for anything Open MPI or the
 * library keeps alive from the first measurement on (measured: 0). */
enum { kC2fSlack = 8 };

/* RSS growth allowed: kRssFixedKiB once plus kRssBytesPerCycle per cycle.
 * libmatexcomm keeps a shell of ~50 bytes per communicator handle it ever
 * handed out (libmatexcomm/src/api/c_api.cc, on purpose: a stale handle
 * never aliases a newer communicator), one per served communicator, with
 * its hash-set node. Measured on 2 cores, Open MPI 4.1.4, MATEX_INTERPOSE=all
 * (after the warm-up): 1 rank 1000 cycles +180 KiB; 2 ranks 1000 cycles
 * +320 KiB, 10000 cycles +1.2 MiB (~100 B per further cycle, about 1.14
 * served communicators each); 4 ranks (2,2) 1000 cycles +310 KiB. What a
 * leak costs, measured the same way: a served communicator never freed
 * (its segment, its private communicators) ~78 KiB per cycle; a bare Open
 * MPI communicator never freed (interposer off) ~8 KiB per cycle. The bound
 * (512 KiB + 1 KiB per cycle) is 5-9x the growth measured and 8x below the
 * smallest of those leaks per cycle (which the c2f check catches anyway). */
enum { kRssFixedKiB = 512, kRssBytesPerCycle = 1024 };

/* Allgather and Bcast every kDataEvery cycles; two communicators at once
 * (the older freed first) every kPairEvery cycles. */
enum { kDataEvery = 100, kPairEvery = 7 };

/* ---- the attribute whose copies are counted ---------------------------- */

static long g_attr_copies = 0;   /* copy callback runs */
static long g_attr_deletes = 0;  /* delete callback runs */
static long g_attr_dups = 0;     /* MPI_Comm_dup calls this program made on a communicator carrying it */
static int g_attr_marker = 42;   /* the attribute's value: its address */

static int count_copy(MPI_Comm old, int keyval, void* extra, void* value_in, void* value_out, int* flag) {
  (void)old;
  (void)keyval;
  (void)extra;
  ++g_attr_copies;
  *(void**)value_out = value_in;  /* the copy carries it on */
  *flag = 1;
  return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm;
  (void)keyval;
  (void)extra;
  check(value == &g_attr_marker, "the delete callback got %p, not the attribute's value %p", value,
        (void*)&g_attr_marker);
  ++g_attr_deletes;
  return MPI_SUCCESS;
}

/* A dup of `comm`, counted when `comm` carries the attribute. */
static MPI_Comm dup_of(MPI_Comm comm, int keyval) {
  void* value = NULL;
  int found = 0;
  MPI_Comm_get_attr(comm, keyval, &value, &found);
  MPI_Comm copy = MPI_COMM_NULL;
  check(MPI_Comm_dup(comm, &copy) == MPI_SUCCESS, "MPI_Comm_dup failed");
  if (found) ++g_attr_dups;
  return copy;
}

/* ---- what /proc says ----------------------------------------------------- */

typedef struct {
  long fds;        /* entries of /proc/self/fd (the directory's own fd included, alike each time) */
  long shm_maps;   /* /proc/self/maps lines naming /dev/shm/matex */
  long rss_kib;    /* VmRSS */
  int c2f;         /* MPI_Comm_c2f of a fresh dup of MPI_COMM_WORLD */
} Usage;

static long count_fds(void) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == NULL) {
    check_fail("cannot open /proc/self/fd");
    return -1;
  }
  long count = 0;
  for (struct dirent* entry = readdir(dir); entry != NULL; entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

static long count_shm_maps(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) {
    check_fail("cannot open /proc/self/maps");
    return -1;
  }
  char line[4096];
  long count = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    if (strstr(line, "/dev/shm/matex") != NULL) ++count;
  }
  fclose(maps);
  return count;
}

static long rss_kib(void) {
  FILE* status = fopen("/proc/self/status", "r");
  if (status == NULL) {
    check_fail("cannot open /proc/self/status");
    return -1;
  }
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, status) != NULL) {
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  }
  fclose(status);
  check(kib >= 0, "no VmRSS line in /proc/self/status");
  return kib;
}

static Usage measure(int keyval) {
  Usage usage;
  MPI_Comm probe = dup_of(MPI_COMM_WORLD, keyval);  /* collective */
  usage.c2f = (int)MPI_Comm_c2f(probe);
  MPI_Comm_free(&probe);
  usage.fds = count_fds();
  usage.shm_maps = count_shm_maps();
  usage.rss_kib = rss_kib();
  return usage;
}

/* ---- one communicator's use ---------------------------------------------- */

/* What this rank knows about a communicator without asking it. */
typedef struct {
  MPI_Comm comm;
  int rank;  /* expected rank in comm */
  int size;  /* expected size of comm */
  const char* how;
} Made;

enum { kAllreduceCount = 4 };

/* A served MPI_Allreduce (MPI_INT, MPI_SUM): rank r gives (r + 1) * (i + 1) +
 * salt in element i, so element i sums to (i + 1) * n (n + 1) / 2 + n salt.
 * Every 100th cycle also an MPI_Bcast from a rotating root and an
 * MPI_Allgather of one int per rank. */
static void use(const Made* m, long cycle) {
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(m->comm, &rank);
  MPI_Comm_size(m->comm, &size);
  check(rank == m->rank && size == m->size, "cycle %ld, %s: rank %d of %d, expected %d of %d", cycle, m->how, rank,
        size, m->rank, m->size);
  const int n = m->size;
  const int salt = (int)(cycle % 1000);
  int send[kAllreduceCount];
  int recv[kAllreduceCount];
  for (int i = 0; i < kAllreduceCount; ++i) {
    send[i] = (m->rank + 1) * (i + 1) + salt;
    recv[i] = -1;
  }
  check(MPI_Allreduce(send, recv, kAllreduceCount, MPI_INT, MPI_SUM, m->comm) == MPI_SUCCESS,
        "cycle %ld, %s: MPI_Allreduce failed", cycle, m->how);
  for (int i = 0; i < kAllreduceCount; ++i) {
    const int expected = (i + 1) * n * (n + 1) / 2 + n * salt;
    check(recv[i] == expected, "cycle %ld, %s: MPI_Allreduce element %d is %d, expected %d", cycle, m->how, i,
          recv[i], expected);
  }
  if (cycle % kDataEvery != 0) return;

  const int root = (int)(cycle / kDataEvery) % n;
  int payload[3];
  for (int i = 0; i < 3; ++i) payload[i] = m->rank == root ? (int)cycle * 3 + i : -1;
  check(MPI_Bcast(payload, 3, MPI_INT, root, m->comm) == MPI_SUCCESS, "cycle %ld, %s: MPI_Bcast failed", cycle,
        m->how);
  for (int i = 0; i < 3; ++i) {
    check(payload[i] == (int)cycle * 3 + i, "cycle %ld, %s: MPI_Bcast from %d: element %d is %d, expected %d", cycle,
          m->how, root, i, payload[i], (int)cycle * 3 + i);
  }

  int mine = m->rank * 1000 + salt;
  int* all = malloc(sizeof(int) * (size_t)n);
  for (int r = 0; r < n; ++r) all[r] = -1;
  check(MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, m->comm) == MPI_SUCCESS,
        "cycle %ld, %s: MPI_Allgather failed", cycle, m->how);
  for (int r = 0; r < n; ++r) {
    check(all[r] == r * 1000 + salt, "cycle %ld, %s: MPI_Allgather block %d is %d, expected %d", cycle, m->how, r,
          all[r], r * 1000 + salt);
  }
  free(all);
}

/* The communicator of kind `kind` (0..3). For a dup of a dup the
 * intermediate dup is freed at once, never used (so it never gets a state). */
static Made make(int kind, int world_rank, int world_size, int keyval) {
  Made m;
  switch (kind) {
    case 0:
      m.comm = dup_of(MPI_COMM_WORLD, keyval);
      m.rank = world_rank;
      m.size = world_size;
      m.how = "dup of MPI_COMM_WORLD";
      break;
    case 1: {
      /* Even ranks: ceil(size / 2) of them; odd ranks: floor(size / 2); keys
       * keep world order, so the rank is world_rank / 2. */
      const int parity = world_rank % 2;
      MPI_Comm_split(MPI_COMM_WORLD, parity, world_rank, &m.comm);
      m.rank = world_rank / 2;
      m.size = parity == 0 ? (world_size + 1) / 2 : world_size / 2;
      m.how = "split by parity";
      break;
    }
    case 2:
      MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &m.comm);
      m.rank = world_size - 1 - world_rank;
      m.size = world_size;
      m.how = "split with reversed keys";
      break;
    default: {
      MPI_Comm first = dup_of(MPI_COMM_WORLD, keyval);
      m.comm = dup_of(first, keyval);
      MPI_Comm_free(&first);
      m.rank = world_rank;
      m.size = world_size;
      m.how = "dup of a dup";
      break;
    }
  }
  check(m.comm != MPI_COMM_NULL, "%s made MPI_COMM_NULL", m.how);
  return m;
}

static void one_cycle(long cycle, int world_rank, int world_size, int keyval) {
  Made m = make((int)(cycle % 4), world_rank, world_size, keyval);
  use(&m, cycle);
  if (cycle % kPairEvery == kPairEvery - 1) {
    /* Two alive at once (the second of the next kind), the first freed first. */
    Made second = make((int)((cycle + 1) % 4), world_rank, world_size, keyval);
    use(&second, cycle);
    MPI_Comm_free(&m.comm);
    use(&second, cycle);  /* its state is untouched by the other's release */
    MPI_Comm_free(&second.comm);
  } else {
    MPI_Comm_free(&m.comm);
  }
  check(m.comm == MPI_COMM_NULL, "cycle %ld: MPI_Comm_free left the handle set", cycle);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long cycles = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
  if (cycles < 1) cycles = 1;

  /* The attribute goes on MPI_COMM_WORLD before any collective. */
  int keyval = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(count_copy, count_delete, &keyval, NULL);
  MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &g_attr_marker);

  /* Warm-up: cycles 0..6 (every kind, the Bcast and Allgather of cycle 0,
   * the pair of cycle 6) and a collective on MPI_COMM_WORLD (whose state
   * lives to MPI_Finalize), so that what is built once (type tables, MPI's
   * free lists, allocator arenas) is there before the first measurement. */
  for (long warm = 0; warm < kPairEvery; ++warm) one_cycle(warm, rank, size, keyval);
  int one = 1;
  int ranks = 0;
  check(MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
            ranks == size, "MPI_Allreduce on MPI_COMM_WORLD: %d, expected %d", ranks, size);

  const Usage before = measure(keyval);
  long shm_while_live = -1;
  for (long cycle = 0; cycle < cycles; ++cycle) {
    one_cycle(cycle, rank, size, keyval);
    if (cycle == 0) {
      /* A communicator with a state is alive here: its segment shows in the
       * maps (so that equal counts at the end are not vacuous). */
      Made m = make(0, rank, size, keyval);
      use(&m, cycle);
      shm_while_live = count_shm_maps();
      MPI_Comm_free(&m.comm);
    }
  }
  const Usage after = measure(keyval);

  /* RSS: the bound and what was measured are at kRssFixedKiB. */
  const long rss_growth = (after.rss_kib - before.rss_kib) * 1024;
  const double per_cycle = (double)rss_growth / (double)cycles;
  check(after.fds == before.fds, "open file descriptors: %ld before, %ld after %ld cycles", before.fds, after.fds,
        cycles);
  check(after.shm_maps == before.shm_maps, "/dev/shm/matex mappings: %ld before, %ld after %ld cycles",
        before.shm_maps, after.shm_maps, cycles);
  check(shm_while_live > before.shm_maps || size == 1,
        "a live communicator with a state added no /dev/shm/matex mapping (%ld, %ld without)", shm_while_live,
        before.shm_maps);
  check(after.c2f <= before.c2f + kC2fSlack, "MPI_Comm_c2f of a fresh communicator: %d before, %d after %ld cycles",
        before.c2f, after.c2f, cycles);
  const long rss_bound = (long)kRssFixedKiB * 1024 + (long)kRssBytesPerCycle * cycles;
  check(rss_growth < rss_bound, "VmRSS grew by %ld KiB over %ld cycles (%.0f B per cycle; at most %ld KiB allowed)",
        after.rss_kib - before.rss_kib, cycles, per_cycle, rss_bound / 1024);

  /* Copies: once per dup of an attribute-carrying communicator; deletes: once
   * per freed one (all of them are freed; MPI_COMM_WORLD's goes at
   * MPI_Finalize). */
  check(g_attr_copies == g_attr_dups, "the attribute's copy callback ran %ld times for %ld MPI_Comm_dup calls",
        g_attr_copies, g_attr_dups);
  check(g_attr_deletes == g_attr_dups, "the attribute's delete callback ran %ld times for %ld freed copies",
        g_attr_deletes, g_attr_dups);

  /* Every rank's numbers, printed by rank 0. */
  long mine[9] = {before.fds, after.fds, before.shm_maps, after.shm_maps, shm_while_live, before.c2f, after.c2f,
                  before.rss_kib, after.rss_kib};
  long* all = malloc(sizeof mine * (size_t)size);
  PMPI_Gather(mine, 9, MPI_LONG, all, 9, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("interposer_lifecycle: %ld cycles on %d ranks; copy callback %ld times for %ld dups\n", cycles, size,
           g_attr_copies, g_attr_dups);
    for (int r = 0; r < size; ++r) {
      const long* u = all + 9 * r;
      printf("  rank %d: fds %ld -> %ld, shm maps %ld -> %ld (%ld with one more alive), c2f %ld -> %ld, "
             "VmRSS %ld -> %ld KiB (%+.1f B per cycle)\n",
             r, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], (double)(u[8] - u[7]) * 1024 / (double)cycles);
    }
    fflush(stdout);
  }
  free(all);

  const int status = check_verdict("interposer_lifecycle");
  MPI_Comm_free_keyval(&keyval);
  MPI_Finalize();
  return status;
}
