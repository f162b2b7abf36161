/* interposer_misuse.c - the calls the interposer must not serve, or must
 * serve while other things happen, give MPI's answers.
 *
 * a. An intercommunicator (>= 2 ranks): MPI_Allreduce reduces over the remote
 *    group, MPI_Bcast takes MPI_ROOT / MPI_PROC_NULL; both go to PMPI.
 * b. Erroneous calls on a communicator with MPI_ERRORS_RETURN return an
 *    error code (count -1, root = size, MPI_DATATYPE_NULL, recvbuf =
 *    MPI_IN_PLACE, MPI_COMM_NULL) and leave the communicator usable. Ranks
 *    that disagree on a served call's count (>= 2 ranks) get an error code
 *    back on every rank, and the communicator is checked afterwards.
 * c. MPI_THREAD_MULTIPLE: two threads, each on its own dup of
 *    MPI_COMM_WORLD whose libmatexcomm state is built by the thread's first
 *    call, run 200 served MPI_Allreduce calls each, concurrently.
 * d. A user-defined op, MPI_LAND on ints, MPI_MINLOC on MPI_FLOAT_INT and
 *    MPI_MAXLOC on MPI_2INT (all PMPI's) give MPI's results.
 * Every result is checked against a closed form. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int g_rank = 0;  /* in MPI_COMM_WORLD */
static int g_size = 1;

static void note(const char* text) {
  if (g_rank == 0) {
    printf("interposer_misuse: %s\n", text);
    fflush(stdout);
  }
}

static const char* error_text(int code) {
  static _Thread_local char text[MPI_MAX_ERROR_STRING];  /* threads call it too */
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "code %d", code);
  return text;
}

/* ---- a. intercommunicator ------------------------------------------------ */

static void section_intercomm(void) {
  if (g_size < 2) {
    note("a. intercommunicator: skipped (needs 2 ranks or more)");
    return;
  }
  /* Group A: world ranks [0, half); group B: [half, size). */
  const int half = g_size / 2;
  const int in_a = g_rank < half;
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, in_a ? 0 : 1, g_rank, &local);
  MPI_Comm inter = MPI_COMM_NULL;
  check(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? half : 0, 17, &inter) == MPI_SUCCESS,
        "MPI_Intercomm_create failed");
  int remote_size = 0;
  MPI_Comm_remote_size(inter, &remote_size);
  check(remote_size == (in_a ? g_size - half : half), "remote group of %d ranks", remote_size);

  /* Each rank gives world_rank + 1 (and twice that); the result is the sum
   * over the remote group: A = 1..half, B = half+1..size. */
  const long sum_a = (long)half * (half + 1) / 2;
  const long sum_b = (long)g_size * (g_size + 1) / 2 - sum_a;
  const long expected = in_a ? sum_b : sum_a;
  long send[2] = {g_rank + 1, 2L * (g_rank + 1)};
  long recv[2] = {-1, -1};
  check(MPI_Allreduce(send, recv, 2, MPI_LONG, MPI_SUM, inter) == MPI_SUCCESS,
        "MPI_Allreduce on an intercommunicator failed");
  check(recv[0] == expected && recv[1] == 2 * expected,
        "MPI_Allreduce on an intercommunicator: %ld %ld, expected the remote group's %ld %ld", recv[0], recv[1],
        expected, 2 * expected);

  /* Broadcast from group A's rank 0 to group B: the root passes MPI_ROOT,
   * the rest of A MPI_PROC_NULL (their buffers stay as they are), B the
   * root's rank in the remote group. */
  int payload[4];
  for (int i = 0; i < 4; ++i) payload[i] = g_rank == 0 ? 700 + i : -1;
  const int root = in_a ? (g_rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  check(MPI_Bcast(payload, 4, MPI_INT, root, inter) == MPI_SUCCESS, "MPI_Bcast on an intercommunicator failed");
  for (int i = 0; i < 4; ++i) {
    const int want = (!in_a || g_rank == 0) ? 700 + i : -1;
    check(payload[i] == want, "MPI_Bcast on an intercommunicator (%s): element %d is %d, expected %d",
          in_a ? (g_rank == 0 ? "MPI_ROOT" : "MPI_PROC_NULL") : "receiver", i, payload[i], want);
  }

  /* And back, from group B's rank 0 to group A, in the other direction. */
  int back = !in_a && g_rank == half ? 4242 : -7;
  const int back_root = in_a ? 0 : (g_rank == half ? MPI_ROOT : MPI_PROC_NULL);
  check(MPI_Bcast(&back, 1, MPI_INT, back_root, inter) == MPI_SUCCESS, "MPI_Bcast from group B failed");
  check(back == (in_a || g_rank == half ? 4242 : -7), "MPI_Bcast from group B: %d", back);

  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
  note("a. intercommunicator: done");
}

/* ---- b. error handlers and disagreeing ranks ----------------------------- */

/* A served MPI_Allreduce on comm, checked: element i sums to
 * (i + 1) n (n + 1) / 2 + n tag. */
static int allreduce_works(MPI_Comm comm, int tag, const char* when) {
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  int send[6];
  int recv[6];
  for (int i = 0; i < 6; ++i) {
    send[i] = (rank + 1) * (i + 1) + tag;
    recv[i] = -1;
  }
  const int rc = MPI_Allreduce(send, recv, 6, MPI_INT, MPI_SUM, comm);
  check(rc == MPI_SUCCESS, "%s: MPI_Allreduce returned %s", when, error_text(rc));
  int ok = rc == MPI_SUCCESS;
  for (int i = 0; i < 6; ++i) {
    const int want = (i + 1) * n * (n + 1) / 2 + n * tag;
    if (recv[i] != want) ok = 0;
    check(recv[i] == want, "%s: MPI_Allreduce element %d is %d, expected %d", when, i, recv[i], want);
  }
  return ok;
}

static void section_errors(void) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  allreduce_works(comm, 3, "before the erroneous calls");

  int send[4] = {1, 2, 3, 4};
  int recv[4] = {0, 0, 0, 0};
  int rc = MPI_Allreduce(send, recv, -1, MPI_INT, MPI_SUM, comm);
  check(rc != MPI_SUCCESS, "MPI_Allreduce with count -1 returned MPI_SUCCESS");
  rc = MPI_Bcast(send, 4, MPI_INT, g_size, comm);
  check(rc != MPI_SUCCESS, "MPI_Bcast with root = size (%d) returned MPI_SUCCESS", g_size);
  rc = MPI_Bcast(send, 4, MPI_INT, -1, comm);
  check(rc != MPI_SUCCESS, "MPI_Bcast with root = -1 returned MPI_SUCCESS");
  rc = MPI_Allreduce(send, recv, 4, MPI_DATATYPE_NULL, MPI_SUM, comm);
  check(rc != MPI_SUCCESS, "MPI_Allreduce with MPI_DATATYPE_NULL returned MPI_SUCCESS");
  /* An error on MPI_COMM_NULL goes to MPI_COMM_WORLD's handler; so does
   * Open MPI's (4.1) MPI_ERR_BUFFER for recvbuf = MPI_IN_PLACE, whatever the
   * communicator (so without the interposer too). */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  rc = MPI_Allreduce(send, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, comm);
  check(rc != MPI_SUCCESS, "MPI_Allreduce with recvbuf = MPI_IN_PLACE returned MPI_SUCCESS");
  rc = MPI_Allreduce(send, recv, 4, MPI_INT, MPI_SUM, MPI_COMM_NULL);
  check(rc != MPI_SUCCESS, "MPI_Allreduce on MPI_COMM_NULL returned MPI_SUCCESS");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

  /* The communicator still serves. */
  allreduce_works(comm, 5, "after the erroneous calls");
  int value = g_rank == 0 ? 31337 : 0;
  check(MPI_Bcast(&value, 1, MPI_INT, 0, comm) == MPI_SUCCESS && value == 31337,
        "MPI_Bcast after the erroneous calls: %d", value);
  MPI_Comm_free(&comm);
  note("b. erroneous calls: done");

  if (g_size < 2) {
    note("b. disagreeing ranks: skipped (needs 2 ranks or more)");
    return;
  }
  /* Rank 0 reduces 5 ints, the others 6: an erroneous program that
   * libmatexcomm detects (MATEX_ERR_MISMATCH, which the interposer raises as
   * MPI_ERR_TRUNCATE on the communicator). Every rank must get an error back
   * (MPI_ERRORS_RETURN), none may hang or abort. */
  MPI_Comm mismatched = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mismatched);
  MPI_Comm_set_errhandler(mismatched, MPI_ERRORS_RETURN);
  allreduce_works(mismatched, 1, "before the disagreeing call");
  int in[6] = {1, 1, 1, 1, 1, 1};
  int out[6] = {0, 0, 0, 0, 0, 0};
  rc = MPI_Allreduce(in, out, g_rank == 0 ? 5 : 6, MPI_INT, MPI_SUM, mismatched);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  check(rc != MPI_SUCCESS, "MPI_Allreduce with counts 5 (rank 0) and 6 (the others) returned MPI_SUCCESS");
  check(error_class == MPI_ERR_TRUNCATE, "MPI_Allreduce with disagreeing counts: error class %d (%s), expected "
        "MPI_ERR_TRUNCATE (the interposer's class for MATEX_ERR_MISMATCH)", error_class, error_text(rc));
  /* Every rank learns what each rank got. */
  int classes_ok = error_class == MPI_ERR_TRUNCATE;
  int everywhere = 0;
  PMPI_Allreduce(&classes_ok, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("interposer_misuse: b. disagreeing counts: rank 0 got %s; every rank MPI_ERR_TRUNCATE: %s\n",
           error_text(rc), everywhere ? "yes" : "no");
  }
  /* The same communicator afterwards, and a fresh one. */
  const int after = allreduce_works(mismatched, 2, "the same communicator after the disagreeing call");
  int after_everywhere = 0;
  PMPI_Allreduce((void*)&after, &after_everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("interposer_misuse: b. a correct MPI_Allreduce on that communicator afterwards: %s\n",
           after_everywhere ? "works on every rank" : "FAILS");
    fflush(stdout);
  }
  MPI_Comm_free(&mismatched);
  MPI_Comm fresh = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  allreduce_works(fresh, 4, "a fresh communicator after the disagreeing call");
  MPI_Comm_free(&fresh);
  note("b. disagreeing ranks: done");
}

/* ---- c. threads ----------------------------------------------------------- */

enum { kThreads = 2, kThreadCalls = 200 };

typedef struct {
  MPI_Comm comm;    /* this thread's own dup of MPI_COMM_WORLD, no state yet */
  int thread;
  long failures;    /* counted here: check() is not thread-safe */
  long calls_ok;
} ThreadWork;

/* Printed at once (the first 5 per thread), counted for the main thread. */
static void thread_fail(ThreadWork* w, const char* format, ...) {
  if (w->failures++ >= 5) return;
  char text[256];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  fprintf(stderr, "rank %d thread %d: FAIL: %s\n", g_rank, w->thread, text);
}

/* Call `it` reduces kSizes[it % 4] doubles, element i on rank r being
 * (r + 1) k + t with k = 1 + (i + it + t) % 17: the sum is
 * k n (n + 1) / 2 + n t, exact in double. Odd calls are in place. */
static void* thread_main(void* arg) {
  static const int kSizes[4] = {1, 7, 1000, 100000};
  ThreadWork* w = arg;
  int rank = 0;
  int n = 1;
  MPI_Comm_rank(w->comm, &rank);
  MPI_Comm_size(w->comm, &n);
  double* send = malloc(sizeof(double) * 100000);
  double* recv = malloc(sizeof(double) * 100000);
  const int t = w->thread;
  for (int it = 0; it < kThreadCalls; ++it) {
    const int count = kSizes[it % 4];
    const int in_place = it % 2 == 1;
    double* data = in_place ? recv : send;
    for (int i = 0; i < count; ++i) {
      data[i] = (double)((rank + 1) * (1 + (i + it + t) % 17) + t);
      if (!in_place) recv[i] = -1;
    }
    const int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_DOUBLE, MPI_SUM, w->comm);
    if (rc != MPI_SUCCESS) {
      thread_fail(w, "call %d (%d doubles): MPI_Allreduce returned %s", it, count, error_text(rc));
      continue;
    }
    long wrong = 0;
    for (int i = 0; i < count; ++i) {
      const double want = (double)(1 + (i + it + t) % 17) * n * (n + 1) / 2 + (double)n * t;
      if (recv[i] != want) {
        if (wrong++ == 0) thread_fail(w, "call %d (%d doubles): element %d is %g, expected %g", it, count, i, recv[i], want);
      }
    }
    if (wrong == 0) ++w->calls_ok;
  }
  free(send);
  free(recv);
  return NULL;
}

static void section_threads(int provided) {
  if (provided < MPI_THREAD_MULTIPLE) {
    check_fail("MPI_Init_thread provided %d, not MPI_THREAD_MULTIPLE: the thread section cannot run", provided);
    return;
  }
  ThreadWork work[kThreads];
  pthread_t threads[kThreads];
  /* Made here, in the same order on every rank; their first collective (and
   * so their libmatexcomm state) comes inside the threads. */
  for (int t = 0; t < kThreads; ++t) {
    work[t].thread = t;
    work[t].failures = 0;
    work[t].calls_ok = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &work[t].comm);
  }
  for (int t = 0; t < kThreads; ++t) {
    check(pthread_create(&threads[t], NULL, thread_main, &work[t]) == 0, "pthread_create failed");
  }
  for (int t = 0; t < kThreads; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < kThreads; ++t) {
    check(work[t].failures == 0 && work[t].calls_ok == kThreadCalls,
          "thread %d: %ld of %d MPI_Allreduce calls right, %ld failures", t, work[t].calls_ok, (int)kThreadCalls,
          work[t].failures);
    /* Still usable from the main thread afterwards. */
    allreduce_works(work[t].comm, t, "a thread's communicator, from the main thread after the join");
    MPI_Comm_free(&work[t].comm);
  }
  note("c. threads: done");
}

/* ---- d. ops the interposer leaves to MPI ---------------------------------- */

static long g_user_op_calls = 0;

/* A commutative user op on ints: inout = in + inout. */
static void user_sum(void* in, void* inout, int* count, MPI_Datatype* type) {
  (void)type;
  const int* a = in;
  int* b = inout;
  for (int i = 0; i < *count; ++i) b[i] += a[i];
  ++g_user_op_calls;
}

static void section_ops(void) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int n = g_size;
  const int r = g_rank;

  /* User-defined op: rank r gives r + 1 + 10 i in element i. */
  MPI_Op op = MPI_OP_NULL;
  MPI_Op_create(user_sum, 1, &op);
  int send[3];
  int recv[3];
  for (int i = 0; i < 3; ++i) {
    send[i] = r + 1 + 10 * i;
    recv[i] = -1;
  }
  check(MPI_Allreduce(send, recv, 3, MPI_INT, op, comm) == MPI_SUCCESS, "MPI_Allreduce with a user op failed");
  for (int i = 0; i < 3; ++i) {
    const int want = n * (n + 1) / 2 + 10 * i * n;
    check(recv[i] == want, "MPI_Allreduce with a user op: element %d is %d, expected %d", i, recv[i], want);
  }
  /* With several ranks MPI ran the function somewhere. */
  long calls = 0;
  PMPI_Allreduce(&g_user_op_calls, &calls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  check(n == 1 || calls > 0, "the user op never ran on %d ranks", n);
  MPI_Op_free(&op);

  /* MPI_LAND on ints (a logical op: libmatexcomm's are bitwise). Inputs 0
   * and 1 only: over one rank Open MPI returns the input as it is. */
  int truth[3] = {1, r == 0 ? 0 : 1, r == n - 1 ? 0 : 1};
  int land[3] = {-1, -1, -1};
  check(MPI_Allreduce(truth, land, 3, MPI_INT, MPI_LAND, comm) == MPI_SUCCESS, "MPI_Allreduce MPI_LAND failed");
  check(land[0] == 1 && land[1] == 0 && land[2] == 0, "MPI_Allreduce MPI_LAND: %d %d %d, expected 1 0 0", land[0],
        land[1], land[2]);

  /* MPI_MINLOC on MPI_FLOAT_INT. */
  struct {
    float value;
    int index;
  } mine[4], low[4];
  mine[0].value = (float)(100 - r), mine[0].index = r;              /* min at rank n - 1 */
  mine[1].value = (float)(10 + r), mine[1].index = r;               /* min at rank 0 */
  mine[2].value = 5.0f, mine[2].index = r;                          /* a tie: the lowest index */
  mine[3].value = r == n / 2 ? -1.5f : 2.5f, mine[3].index = 10 * r; /* min at rank n / 2 */
  memset(low, 0xff, sizeof low);
  check(MPI_Allreduce(mine, low, 4, MPI_FLOAT_INT, MPI_MINLOC, comm) == MPI_SUCCESS,
        "MPI_Allreduce MPI_FLOAT_INT MPI_MINLOC failed");
  const float want_value[4] = {(float)(100 - (n - 1)), 10.0f, 5.0f, -1.5f};
  const int want_index[4] = {n - 1, 0, 0, 10 * (n / 2)};
  for (int i = 0; i < 4; ++i) {
    check(low[i].value == want_value[i] && low[i].index == want_index[i],
          "MPI_MINLOC element %d: (%g, %d), expected (%g, %d)", i, (double)low[i].value, low[i].index,
          (double)want_value[i], want_index[i]);
  }

  /* MPI_MAXLOC on MPI_2INT. */
  int pair[2] = {r * r, r};
  int high[2] = {-1, -1};
  check(MPI_Allreduce(pair, high, 1, MPI_2INT, MPI_MAXLOC, comm) == MPI_SUCCESS,
        "MPI_Allreduce MPI_2INT MPI_MAXLOC failed");
  check(high[0] == (n - 1) * (n - 1) && high[1] == n - 1, "MPI_MAXLOC: (%d, %d), expected (%d, %d)", high[0],
        high[1], (n - 1) * (n - 1), n - 1);

  MPI_Comm_free(&comm);
  note("d. ops left to MPI: done");
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  check(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided %d, not MPI_THREAD_MULTIPLE (%d)", provided,
        MPI_THREAD_MULTIPLE);

  section_intercomm();
  section_errors();
  section_threads(provided);
  section_ops();

  const int status = check_verdict("interposer_misuse");
  MPI_Finalize();
  return status;
}
