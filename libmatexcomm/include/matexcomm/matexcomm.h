/*
 * matexcomm.h - the stable C API of libmatexcomm.
 *
 * A topology-aware collective library: ranks are grouped into nodes (hwloc +
 * host id, or MATEX_VIRTUAL_NODES); inside a node data moves through shared
 * memory, across nodes through MPI.
 *
 * Conventions
 *  - Every function returns a matex_status_t. MATEX_SUCCESS is 0.
 *  - On failure, matex_last_error() returns a readable message (thread-local)
 *    that names the argument or the peer rank at fault.
 *  - No C++ exception ever leaves this API.
 *  - Handles are opaque. A handle that was finalized, or never initialized,
 *    is detected and rejected with MATEX_ERR_NOT_INITIALIZED.
 *  - Collectives are blocking and must be called by every rank of the
 *    communicator in the same order with the same count, dtype and op.
 *    Inside a node, ranks that disagree get MATEX_ERR_MISMATCH.
 *  - A communicator is used by one thread at a time (like an MPI communicator
 *    in MPI_THREAD_SERIALIZED); different communicators may be used from
 *    different threads.
 *  - "In place": pass the same pointer as send and receive buffer, or
 *    MATEX_IN_PLACE as the send buffer (MPI semantics, see each call).
 *
 * To create a communicator over an MPI communicator of your own, include
 * <matexcomm/matexcomm_mpi.h>.
 */
#ifndef MATEXCOMM_MATEXCOMM_H
#define MATEXCOMM_MATEXCOMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MATEX_VERSION_MAJOR 0
#define MATEX_VERSION_MINOR 2
#define MATEX_VERSION_PATCH 0

/* Symbol visibility: the library is built with hidden visibility by default. */
#if defined(__GNUC__)
#define MATEX_API __attribute__((visibility("default")))
#else
#define MATEX_API
#endif

typedef enum matex_status {
  MATEX_SUCCESS = 0,
  MATEX_ERR_INVALID_ARG = 1,     /* a bad pointer, count, dtype, op or root */
  MATEX_ERR_NOT_INITIALIZED = 2, /* NULL, never-initialized or finalized comm */
  MATEX_ERR_CONFIG = 3,          /* a bad MATEX_* environment variable */
  MATEX_ERR_MPI = 4,             /* MPI reported an error */
  MATEX_ERR_SYSTEM = 5,          /* an OS call failed (shm, mmap, hwloc) */
  MATEX_ERR_TIMEOUT = 6,         /* a peer did not arrive in MATEX_TIMEOUT_SECONDS */
  MATEX_ERR_MISMATCH = 7,        /* ranks called a collective with different arguments */
  MATEX_ERR_UNSUPPORTED = 8,     /* valid request this build cannot serve */
  MATEX_ERR_INTERNAL = 9,        /* a bug in libmatexcomm: please report it */
  MATEX_ERR_COMM_FAILED = 10,    /* an earlier failure (timeout, MPI error, a failed peer) left the
                                    communicator unusable: finalize it and create a new one */
  MATEX_ERR_DEVICE = 11          /* CUDA or NCCL reported an error (device memory, a kernel, a stream) */
} matex_status_t;

typedef enum matex_dtype {
  MATEX_INT8 = 0,
  MATEX_UINT8 = 1,
  MATEX_INT32 = 2,
  MATEX_INT64 = 3,
  MATEX_FLOAT16 = 4,  /* IEEE 754 binary16 */
  MATEX_BFLOAT16 = 5, /* bfloat16 */
  MATEX_FLOAT32 = 6,
  MATEX_FLOAT64 = 7,
  MATEX_BOOL = 8,     /* one byte holding 0 or 1: sum and max are a logical or, prod and min a logical and */
  MATEX_INT16 = 9,
  MATEX_UINT16 = 10,
  MATEX_UINT32 = 11,
  MATEX_UINT64 = 12,
  MATEX_DTYPE_COUNT = 13
} matex_dtype_t;

typedef enum matex_op {
  MATEX_SUM = 0,
  MATEX_PROD = 1,
  MATEX_MIN = 2,
  MATEX_MAX = 3,
  MATEX_AVG = 4,  /* floating dtypes only; float16/bfloat16 accumulate in float32 */
  MATEX_BAND = 5, /* bitwise and: integer and bool dtypes only */
  MATEX_BOR = 6,  /* bitwise or: integer and bool dtypes only */
  MATEX_BXOR = 7, /* bitwise exclusive or: integer and bool dtypes only */
  MATEX_OP_COUNT = 8
} matex_op_t;

typedef enum matex_collective {
  MATEX_COLL_ALLREDUCE = 0,
  MATEX_COLL_BROADCAST = 1,
  MATEX_COLL_ALLGATHER = 2,
  MATEX_COLL_REDUCE_SCATTER = 3,
  MATEX_COLL_REDUCE = 4 /* matex_auto_algorithm only: reduce has no algorithm choice */
} matex_collective_t;

/* Send-buffer marker for in-place collectives (never dereferenced). */
#define MATEX_IN_PLACE ((const void*)(intptr_t)1)

typedef struct matex_comm_s* matex_comm_t;

/* ---- status and errors ---------------------------------------------------- */
MATEX_API const char* matex_status_string(matex_status_t status);
/* Message of the last failed call on this thread ("" if none). */
MATEX_API const char* matex_last_error(void);
MATEX_API const char* matex_version_string(void);
/* The effective value of a MATEX_* setting (the environment's, or the table's
 * default), as text valid until this thread's next call. Needs no
 * communicator. MATEX_ERR_CONFIG when any MATEX_* variable is invalid,
 * MATEX_ERR_INVALID_ARG for a name that is not a setting. */
MATEX_API matex_status_t matex_config_get(const char* name, const char** value);
/* The value of a byte-count setting (type "bytes" in docs/configuration.md:
 * "64K" is 65536), with the errors of matex_config_get, and
 * MATEX_ERR_INVALID_ARG for a setting of another type. */
MATEX_API matex_status_t matex_config_get_bytes(const char* name, size_t* bytes);
/* The value of a boolean setting (1 or 0; "yes", "on", "true" count as 1),
 * with the errors of matex_config_get_bytes. */
MATEX_API matex_status_t matex_config_get_bool(const char* name, int* value);

/* ---- life cycle ------------------------------------------------------------ */
/* Creates a communicator over MPI_COMM_WORLD. Initializes MPI (thread level
 * MPI_THREAD_MULTIPLE requested) if the caller has not; in that case the last
 * matex_finalize of matex_init's communicators and their sub-communicators
 * also finalizes MPI (matex_init_mpi's communicators never do: they live on
 * the caller's MPI). Collective over MPI_COMM_WORLD. */
MATEX_API matex_status_t matex_init(matex_comm_t* comm);
/* Frees the communicator and sets *comm to NULL. Collective. */
MATEX_API matex_status_t matex_finalize(matex_comm_t* comm);

/* ---- queries --------------------------------------------------------------- */
MATEX_API matex_status_t matex_comm_rank(matex_comm_t comm, int* rank);
MATEX_API matex_status_t matex_comm_size(matex_comm_t comm, int* size);
MATEX_API matex_status_t matex_comm_local_rank(matex_comm_t comm, int* local_rank);
MATEX_API matex_status_t matex_comm_local_size(matex_comm_t comm, int* local_size);
MATEX_API matex_status_t matex_comm_node_index(matex_comm_t comm, int* node_index);
MATEX_API matex_status_t matex_comm_node_count(matex_comm_t comm, int* node_count);

/* ---- algorithm choice ------------------------------------------------------ */
/* Overrides the algorithm of one collective on this communicator. "auto"
 * restores size-based selection. Names: see docs/algorithms.md; for allreduce
 * "flat", "rs_ar_ag", "rab". Collective: every rank must pass the same name;
 * otherwise every rank gets MATEX_ERR_MISMATCH (or MATEX_ERR_INVALID_ARG for a
 * name that some rank got wrong) and no rank changes its choice. */
MATEX_API matex_status_t matex_set_algorithm(matex_comm_t comm, matex_collective_t coll,
                                             const char* name);
/* Name of the algorithm the last call of `coll` used ("" before the first). */
MATEX_API matex_status_t matex_last_algorithm(matex_comm_t comm, matex_collective_t coll,
                                              const char** name);
/* The algorithm `auto` picks for one call of `coll` (MATEX_COLL_REDUCE too)
 * moving `bytes` on host buffers (the per-rank buffer, as matex-bench counts
 * it), without running it: the same answer on every rank. A forced algorithm
 * is returned as forced. "flat" is the MPI library's own collective on the
 * communicator, and so is any size for which auto expects that to be faster
 * than the hierarchy. The MPI interposer hands those calls to MPI directly. */
MATEX_API matex_status_t matex_auto_algorithm(matex_comm_t comm, matex_collective_t coll, size_t bytes,
                                              const char** name);
/* How auto chooses on this communicator, as lines of text, valid until this
 * thread's next call: the allreduce table measured at creation
 * (MATEX_CALIBRATE=init) with its timings and bands, or the fixed rule, and
 * the other collectives' rules. The same on every rank. */
MATEX_API matex_status_t matex_describe_selection(matex_comm_t comm, const char** text);
/* What a tuning file (MATEX_CALIBRATE=file, written by matex-tune) must have
 * been measured for to serve this communicator: the library version, the
 * kind of host (CPU model, packages, cores, PUs) and the layout key (ranks per
 * node and the settings auto's table depends on). Valid until this thread's
 * next call; loads the hwloc topology, so not for a hot path. */
MATEX_API matex_status_t matex_tuning_identity(matex_comm_t comm, const char** library, const char** host_kind,
                                               const char** layout);

/* ---- collectives ------------------------------------------------------------ */
/* recvbuf[i] = op over ranks of sendbuf[i], for i < count.
 * In place: sendbuf == recvbuf or sendbuf == MATEX_IN_PLACE. */
MATEX_API matex_status_t matex_allreduce(matex_comm_t comm, const void* sendbuf, void* recvbuf,
                                         size_t count, matex_dtype_t dtype, matex_op_t op);

/* buffer of `root` is copied to every rank's buffer. */
MATEX_API matex_status_t matex_broadcast(matex_comm_t comm, void* buffer, size_t count,
                                         matex_dtype_t dtype, int root);

/* recvbuf[r*count .. (r+1)*count) = sendbuf of rank r.
 * In place: sendbuf == MATEX_IN_PLACE or sendbuf == recvbuf + rank*count; the
 * rank's own block is then already in recvbuf. */
MATEX_API matex_status_t matex_allgather(matex_comm_t comm, const void* sendbuf, void* recvbuf,
                                         size_t count, matex_dtype_t dtype);

/* Variable counts: rank r contributes recvcounts[r] elements, placed at
 * element offset displs[r] of recvbuf (displs == NULL: packed in rank order).
 * sendcount must equal recvcounts[rank]. In place as for matex_allgather. */
MATEX_API matex_status_t matex_allgatherv(matex_comm_t comm, const void* sendbuf, size_t sendcount,
                                          void* recvbuf, const size_t* recvcounts,
                                          const size_t* displs, matex_dtype_t dtype);

/* sendbuf holds size*recvcount elements; rank r receives block r of the
 * reduction. In place: sendbuf == MATEX_IN_PLACE, recvbuf holds the whole
 * input and the result is written to its first recvcount elements. */
MATEX_API matex_status_t matex_reduce_scatter(matex_comm_t comm, const void* sendbuf,
                                              void* recvbuf, size_t recvcount, matex_dtype_t dtype,
                                              matex_op_t op);

MATEX_API matex_status_t matex_barrier(matex_comm_t comm);

/* Pre-multiplied sums: every rank first multiplies its own input by its own
 * `factor` (ranks may pass different factors), then the products are summed:
 * recvbuf[i] = sum over ranks r of factor_r * sendbuf_r[i]. Floating dtypes
 * only; float16 and bfloat16 multiply in float32 and round once before the sum.
 * In place as for matex_allreduce and matex_reduce_scatter; the send buffer is
 * never written. Host buffers only in this release (device memory:
 * MATEX_ERR_UNSUPPORTED); integer dtypes: MATEX_ERR_INVALID_ARG naming dtype. */
MATEX_API matex_status_t matex_allreduce_premul_sum(matex_comm_t comm, const void* sendbuf, void* recvbuf,
                                                    size_t count, matex_dtype_t dtype, double factor);
MATEX_API matex_status_t matex_reduce_scatter_premul_sum(matex_comm_t comm, const void* sendbuf, void* recvbuf,
                                                         size_t recvcount, matex_dtype_t dtype, double factor);

/* ---- rooted collectives and all-to-all ------------------------------------------ */
/* Every rank passes the same root, count, dtype and op; arguments that only the
 * root uses (recvbuf of reduce and gather, sendbuf of scatter, the counts and
 * displacements of gatherv and scatterv) are ignored elsewhere and may be NULL.
 * The v-variants check that the counts agree between ranks and fail with
 * MATEX_ERR_MISMATCH naming the rank at fault, on every rank, instead of
 * truncating or hanging. Displacements are in elements; NULL means packed in
 * rank order. Counts and displacements of gather, scatter and alltoall (and
 * their v-variants) must fit an int (MATEX_ERR_UNSUPPORTED naming the argument
 * otherwise); reduce takes any count. All of them take host buffers only in
 * this release (device memory: MATEX_ERR_UNSUPPORTED). */

/* At root: recvbuf[i] = op over ranks of sendbuf[i]. In place at root:
 * sendbuf == MATEX_IN_PLACE or sendbuf == recvbuf. */
MATEX_API matex_status_t matex_reduce(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                      matex_dtype_t dtype, matex_op_t op, int root);
/* At root: recvbuf[r*count .. (r+1)*count) = sendbuf of rank r. In place at
 * root: sendbuf == MATEX_IN_PLACE (root's block is already in recvbuf). */
MATEX_API matex_status_t matex_gather(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                      matex_dtype_t dtype, int root);
/* Rank r sends sendcount elements; at root they land at displs[r] of recvbuf,
 * and recvcounts[r] must equal rank r's sendcount. */
MATEX_API matex_status_t matex_gatherv(matex_comm_t comm, const void* sendbuf, size_t sendcount, void* recvbuf,
                                       const size_t* recvcounts, const size_t* displs, matex_dtype_t dtype,
                                       int root);
/* Rank r receives root's sendbuf[r*count .. (r+1)*count). In place at root:
 * recvbuf == MATEX_IN_PLACE (root keeps its block where it is in sendbuf). */
MATEX_API matex_status_t matex_scatter(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                       matex_dtype_t dtype, int root);
/* Rank r receives sendcounts[r] elements from displs[r] of root's sendbuf;
 * recvcount must equal root's sendcounts[r]. */
MATEX_API matex_status_t matex_scatterv(matex_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                        const size_t* displs, void* recvbuf, size_t recvcount,
                                        matex_dtype_t dtype, int root);
/* Block j of sendbuf (count elements) goes to rank j, which puts it at block r
 * (r the sender) of its recvbuf. The buffers must not overlap. */
MATEX_API matex_status_t matex_alltoall(matex_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                        matex_dtype_t dtype);
/* Rank r sends sendcounts[j] elements from sdispls[j] to rank j, which must
 * expect recvcounts[r] == that count and puts them at rdispls[r]. */
MATEX_API matex_status_t matex_alltoallv(matex_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                         const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                                         const size_t* rdispls, matex_dtype_t dtype);

/* ---- point to point ---------------------------------------------------------------- */
/* A thin layer over MPI that stays on the communicator: messages travel on a
 * private MPI communicator of their own, so they never meet the collectives'
 * traffic, and these calls may run on any thread while another thread runs a
 * collective on the same communicator (that needs MPI_THREAD_MULTIPLE;
 * MATEX_ERR_UNSUPPORTED otherwise). Messages between one pair of ranks with one
 * tag arrive in the order they were sent. Tags are >= 0 (and at most MPI_TAG_UB).
 * Host buffers only in this release; count must fit an int. */
typedef struct matex_p2p_s* matex_p2p_t;
#define MATEX_ANY_SOURCE (-1)

/* Start a send or a receive and return at once. The buffer must stay
 * untouched until the request completes. A receive accepts a message of at
 * most count elements; a longer one fails the request with MATEX_ERR_MISMATCH
 * naming the sender and both sizes. */
MATEX_API matex_status_t matex_isend(matex_comm_t comm, const void* buf, size_t count, matex_dtype_t dtype,
                                     int dest, int tag, matex_p2p_t* request);
MATEX_API matex_status_t matex_irecv(matex_comm_t comm, void* buf, size_t count, matex_dtype_t dtype,
                                     int source, int tag, matex_p2p_t* request);
/* *done = 1 once the request completed (the return value is then its status). */
MATEX_API matex_status_t matex_p2p_test(matex_p2p_t request, int* done);
/* Waits, backing off, at most timeout_seconds (negative: without limit).
 * MATEX_ERR_TIMEOUT on expiry, naming the peer and the tag; the request stays
 * pending and may be waited on again or freed. */
MATEX_API matex_status_t matex_p2p_wait(matex_p2p_t request, double timeout_seconds);
/* A completed receive's sender and element count (MATEX_ERR_INVALID_ARG for a
 * send or a receive still pending). Requests may be tested and waited on from
 * any thread; a freed handle is rejected with MATEX_ERR_NOT_INITIALIZED. */
MATEX_API matex_status_t matex_p2p_status(matex_p2p_t request, int* source, size_t* count);
/* Releases a request and sets *request to NULL. A receive still pending is
 * cancelled; a send still pending is left to MPI to finish. */
MATEX_API matex_status_t matex_p2p_free(matex_p2p_t* request);
/* Blocking forms: isend/irecv, then wait (timeout as for matex_p2p_wait), then
 * free. *source (when not NULL) receives the sender's rank. After a timeout a
 * receive is cancelled; a send is left to MPI, which may still read buf until
 * the receiver takes the message. */
MATEX_API matex_status_t matex_send(matex_comm_t comm, const void* buf, size_t count, matex_dtype_t dtype,
                                    int dest, int tag, double timeout_seconds);
MATEX_API matex_status_t matex_recv(matex_comm_t comm, void* buf, size_t count, matex_dtype_t dtype, int source,
                                    int tag, double timeout_seconds, int* source_out);

/* ---- sub-communicators ------------------------------------------------------------- */
/* A communicator over n ranks of parent: rank i of the new communicator is
 * parent rank ranks[i] (distinct, any order). Collective over the listed ranks
 * only; the others do not call it. The node layout is the parent's
 * (MATEX_VIRTUAL_NODES included), restricted to the members. It may run while
 * another thread runs collectives on parent; two creations over one parent run
 * one at a time on every rank, in the same order. Finalize it with
 * matex_finalize, before or after its parent. */
MATEX_API matex_status_t matex_comm_create_from_ranks(matex_comm_t parent, const int* ranks, int n,
                                                      matex_comm_t* comm);

/* ---- GPU buffers ------------------------------------------------------------- */
/* In a build with CUDA (matex_built_with_cuda() == 1) every collective above
 * also takes buffers in GPU memory (cudaMalloc'd or managed), found out by
 * looking at the pointers. Every rank must then pass GPU memory to the same
 * calls. The GPU that holds the buffers is made current on the calling thread;
 * the node's NCCL communicator belongs to the GPU of the first such call, so
 * later calls must use that GPU too.
 * Inside a node NCCL moves the data; across nodes MPI, directly when it is
 * CUDA-aware, else through pinned host buffers in a pipeline (docs/gpu.md).
 *
 * Stream semantics: a collective on GPU buffers runs on the communicator's
 * stream. It starts after the work already queued there, and returns once its
 * last step is queued there: work queued later on that stream sees the
 * result, and the host must synchronize the stream before reading it. With
 * more than one node the call also blocks until its MPI step across nodes is
 * done. Send buffers may be reused by work queued later on the stream. */
MATEX_API int matex_built_with_cuda(void);
/* stream: a cudaStream_t of the current GPU; NULL (the default) is the legacy
 * default stream. MATEX_ERR_UNSUPPORTED for a non-NULL stream in a build
 * without CUDA. Local (not collective). */
MATEX_API matex_status_t matex_comm_set_cuda_stream(matex_comm_t comm, void* stream);
MATEX_API matex_status_t matex_comm_cuda_stream(matex_comm_t comm, void** stream);

/* ---- CPU threads per rank ---------------------------------------------------- */
/* How many threads a rank's framework should run, and on which CPUs. Ranks on
 * one physical host whose CPU affinities overlap (unbound, or bound to a socket
 * they share) get disjoint blocks of whole cores, one per rank in rank order;
 * a rank the launcher bound apart from the others keeps its binding. A block
 * never adds a CPU the rank's affinity lacks. MATEX_THREADS picks the split
 * (auto, off, or cores per rank). Nothing is bound here: the caller binds its
 * threads to `cpus` when `narrowed` says so. */
typedef struct {
  int cores;            /* physical cores in the block */
  int cpu_count;        /* CPUs (PUs, hardware threads) in the block */
  int intra_op_threads; /* threads for one op's work; 0 (MATEX_THREADS=off): the framework's default */
  int inter_op_threads; /* ops run side by side; 0: the framework's default */
  int narrowed;         /* 1: the block is narrower than the rank's affinity: bind to it */
  int shared;           /* 1: more ranks than cores, so the block is a core other ranks share */
  int starved;          /* 1: the launcher bound the rank to fewer cores than its share of the host */
} matex_thread_budget_t;
/* Collective over comm (the affinity of the calling thread is exchanged).
 * cpus (when not NULL) receives the block's OS CPU indices, cpu_count of them;
 * with cpus_capacity below cpu_count the call fails with MATEX_ERR_INVALID_ARG
 * (after the exchange, on that rank only; *budget is filled all the same). On
 * comm's rank 0, *table (when not NULL) receives a compact table of every
 * rank's budget, cut to table_capacity bytes with a terminating NUL; elsewhere "". */
MATEX_API matex_status_t matex_thread_budget(matex_comm_t comm, matex_thread_budget_t* budget, int* cpus,
                                             size_t cpus_capacity, char* table, size_t table_capacity);

/* ---- asynchronous engine ------------------------------------------------------ */
/* Tensors are handed over by name from any thread and complete later, in an
 * order every rank agrees on: a background thread matches names across ranks
 * and fuses small allreduces (docs/engine.md). Needs MPI_THREAD_MULTIPLE. */
typedef struct matex_engine_s* matex_engine_t;
typedef struct matex_request_s* matex_request_t;

/* Runs on the engine's thread when a tensor completes; message is "" on success. */
typedef void (*matex_completion_fn)(matex_status_t status, const char* message, void* user_data);

typedef struct {
  const char* name;             /* matched across ranks; unique among tensors in flight */
  matex_collective_t coll;      /* MATEX_COLL_ALLREDUCE, _BROADCAST or _ALLGATHER */
  const void* sendbuf;          /* allreduce or allgather input; allreduce: or MATEX_IN_PLACE */
  void* recvbuf;                /* allreduce output; the broadcast buffer; allgather: unused */
  size_t count;                 /* elements; allgather: this rank's rows (may differ between ranks) */
  size_t row_elements;          /* allgather: elements per row, the same everywhere; 0 means 1 */
  matex_dtype_t dtype;
  matex_op_t op;                /* allreduce */
  int root;                     /* broadcast */
  double prescale;              /* allreduce, floating dtypes: inputs are multiplied by it; 0 means 1 */
  double postscale;             /* the result is multiplied by it; 0 means 1 */
  matex_completion_fn callback; /* optional */
  void* user_data;              /* passed to callback */
} matex_tensor_op_t;

/* Starts an engine over comm's ranks (its own communicator and thread).
 * Collective over comm. */
MATEX_API matex_status_t matex_engine_create(matex_comm_t comm, matex_engine_t* engine);
/* Stops the engine on every rank: the first rank to call it ends the engine for
 * all (every tensor needs every rank), so the others never wait for tensors it
 * will not submit. Tensors still pending, and those the other ranks submit
 * afterwards, fail with MATEX_ERR_NOT_INITIALIZED ("shut down", naming the
 * ranks that shut it down first); their requests stay valid until freed. Every
 * rank still calls it to free its handle. Sets *engine to NULL. */
MATEX_API matex_status_t matex_engine_destroy(matex_engine_t* engine);
/* Queues n tensors (all, or none if any is invalid). The buffers must stay
 * untouched until the tensor completes. requests: NULL (nothing to wait on;
 * use callbacks), or n slots that receive one request each, to wait on, test
 * and free. The slots are written before anything is queued, so a callback
 * may read its request there (e.g. for matex_request_output); when the
 * submission is refused they are set to NULL. */
MATEX_API matex_status_t matex_engine_submit(matex_engine_t engine, const matex_tensor_op_t* ops, size_t n,
                                             matex_request_t* requests);
/* A tensor's dimensions (for matex_engine_submit_shaped). */
typedef struct {
  size_t ndim;
  const int64_t* dims; /* ndim extents, each >= 0 */
} matex_shape_t;
/* matex_engine_submit with each op's shape: shapes[i] for ops[i] (shapes itself may be NULL: none).
 * Ranks that give a shape must agree on it as on the count, so that tensors of one count and different
 * shapes (a [17, 1311] and a [17, 23, 57]) fail on every rank with MATEX_ERR_MISMATCH quoting each
 * rank's shape; allgathers agree on every dimension but the first. The product of the dimensions must
 * be count (allgather: dims[0] is count, this rank's rows, and the others multiply to row_elements). */
MATEX_API matex_status_t matex_engine_submit_shaped(matex_engine_t engine, const matex_tensor_op_t* ops,
                                                    const matex_shape_t* shapes, size_t n,
                                                    matex_request_t* requests);
/* Hands over, in place of a tensor, this rank's refusal of it: a check of the
 * caller's own failed (a dtype, an op, a shape it cannot serve), and the other
 * ranks must not wait for data that will never come. Once every rank has
 * submitted the name, the tensor fails on every rank with `status` (an error,
 * not MATEX_SUCCESS) and a message that names each refusing rank and quotes its
 * reason. op: as it would have been submitted; only name, coll, callback and
 * user_data are read. request: NULL or a slot, as in matex_engine_submit. */
MATEX_API matex_status_t matex_engine_submit_refusal(matex_engine_t engine, const matex_tensor_op_t* op,
                                                     matex_status_t status, const char* reason,
                                                     matex_request_t* request);
/* Joins: this rank has no more tensors to submit until every rank has joined.
 * Until then it takes part in the other ranks' allreduces with zeros, so that
 * their sums (and averages, over every rank) are those of the others'
 * tensors; a broadcast or allgather submitted while some rank has joined fails
 * on every rank that submitted it (MATEX_ERR_INVALID_ARG, naming the joined
 * ranks). The request completes on every rank once the last has joined;
 * matex_request_output then gives one int32_t, the rank that joined last (the
 * same everywhere). One join per rank at a time. request: a slot, as in
 * matex_engine_submit. */
MATEX_API matex_status_t matex_engine_submit_join(matex_engine_t engine, matex_request_t* request);
/* Blocks until the tensor completes; returns its status (message: matex_last_error). */
MATEX_API matex_status_t matex_request_wait(matex_request_t request);
/* Blocks until all n requests complete (NULL entries count as complete),
 * waking once rather than once per request. Returns MATEX_SUCCESS, or the
 * status of the first failed request in array order (matex_last_error names
 * its index and the reason). The requests stay valid until freed. */
MATEX_API matex_status_t matex_request_wait_all(matex_request_t* requests, size_t n);
/* *done = 1 and the tensor's status once complete; *done = 0 and MATEX_SUCCESS before. */
MATEX_API matex_status_t matex_request_test(matex_request_t request, int* done);
/* An allgather's result, owned by the request (valid until it is freed): every
 * rank's rows in rank order, *rows of them in all. Only after success; also
 * from inside the tensor's completion callback. */
MATEX_API matex_status_t matex_request_output(matex_request_t request, const void** data, size_t* rows);
/* Releases a request (complete or not: the engine keeps what it needs). Sets *request to NULL. */
MATEX_API matex_status_t matex_request_free(matex_request_t* request);

typedef struct {
  uint64_t cycles;                 /* coordination cycles so far */
  uint64_t cached_cycles;          /* decided by one bitwise-and allreduce of the cache bits */
  uint64_t full_cycles;            /* with a gather and broadcast through rank 0 */
  uint64_t idle_cycles;            /* cached cycles with nothing pending on this rank */
  double idle_coordination_us;     /* median coordination time of recent idle cycles */
  uint64_t fused_responses;        /* operations that carried more than one tensor */
  uint64_t tensors;                /* tensors completed */
} matex_engine_stats_t;
MATEX_API matex_status_t matex_engine_stats(matex_engine_t engine, matex_engine_stats_t* stats);
/* Zeroes this rank's counters and forgets the idle-cycle samples (to measure a window). */
MATEX_API matex_status_t matex_engine_stats_reset(matex_engine_t engine);

/* ---- helpers ---------------------------------------------------------------- */
/* Bytes per element; 0 for an unknown dtype. */
MATEX_API size_t matex_dtype_size(matex_dtype_t dtype);
MATEX_API const char* matex_dtype_name(matex_dtype_t dtype);
MATEX_API const char* matex_op_name(matex_op_t op);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MATEXCOMM_MATEXCOMM_H */
