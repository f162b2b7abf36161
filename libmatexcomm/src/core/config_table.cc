// config_table.cc - THE table of MATEX_* settings. One row per knob.
//
// Columns: name, type, default, choices (kChoice), lowest and highest allowed
// value (numeric types; equal means unbounded), whether every rank must use the
// same value (checked when a communicator is created), one line of doc.
#include "core/config.h"

#include "core/algorithm_catalog.h"

namespace matexcomm {

namespace {
constexpr double kUnbounded = 0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr bool kSameOnAllRanks = true;
constexpr bool kPerRank = false;
}  // namespace

const std::vector<ConfigEntry>& config_table() {
  static const std::vector<ConfigEntry> kConfigTable = {
      {"MATEX_VIRTUAL_NODES", ConfigType::kString, "", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "Split consecutive world ranks into virtual nodes of these sizes, e.g. 2,2 or 3,1; "
       "they must add up to the world size. Empty: group by host id."},
      {"MATEX_HOSTID", ConfigType::kString, "", "", kUnbounded, kUnbounded, kPerRank,
       "Host identity used to group ranks into nodes. Empty: hostname plus boot id."},
      {"MATEX_TIMEOUT_SECONDS", ConfigType::kSeconds, "600", "", 0.001, 1e6, kPerRank,
       "Longest wait for a peer on the same node before the call fails with MATEX_ERR_TIMEOUT naming "
       "it (a peer inside an MPI call across nodes is not missing). With several nodes a timeout ends "
       "the job (MPI_Abort), since other nodes would wait forever. Across nodes, a collective that runs "
       "this long (pinging the other hosts at half of it and just before it) ends the job with an error "
       "naming the hosts that answered neither ping (or this host, when it heard none); when all answer, "
       "it keeps waiting."},
      {"MATEX_CHECK_CALLS", ConfigType::kChoice, "auto", "auto|on|off", kUnbounded, kUnbounded, kSameOnAllRanks,
       "Before each collective, confirm that every rank calls the same one with the same count, dtype, op "
       "and root, so that a mismatch fails on every rank (MATEX_ERR_MISMATCH, naming the ranks) instead of "
       "hanging, crashing or giving a wrong result. Costs one exchange of small messages per collective (about "
       "one small MPI_Allreduce); a flat allreduce of at most 16 KiB carries its data in it. auto: on, "
       "except for allreduces on a single node with shared memory, which compare the calls there instead "
       "(auto's flat too, in a data-less round before MPI's call; one meeting another kind of collective on "
       "a peer times out), and "
       "for the engine's collectives, which its coordinator has agreed on already. on checks those too."},
      {"MATEX_STALL_WARNING_SECONDS", ConfigType::kSeconds, "60", "", 0.001, 1e6, kPerRank,
       "After this long waiting for a peer on the same node, or for any rank in the call check "
       "(MATEX_CHECK_CALLS), warn once on stderr, naming it. A collective across nodes that runs this "
       "long makes its rank time a 1 MiB probe to each other host and warn, naming a slow or silent one "
       "(then at most once per 10 x this long). The "
       "engine's rank 0 likewise warns about tensors that some ranks have submitted and others not."},
      {"MATEX_ALLREDUCE_ALGO", ConfigType::kChoice, "auto", algorithm_choices(MATEX_COLL_ALLREDUCE),
       kUnbounded, kUnbounded,
       kSameOnAllRanks, "Allreduce algorithm: auto selects by message size (MATEX_CALIBRATE)."},
      {"MATEX_CALIBRATE", ConfigType::kChoice, "auto", "auto|off|init|file", kUnbounded, kUnbounded,
       kSameOnAllRanks,
       "How auto picks an allreduce. auto: file where a tuning file exists, else the fixed sizes (a file "
       "that does not fit is refused with a warning, and the fixed sizes apply); in both, trials "
       "(MATEX_ALLREDUCE_TRIALS). off: the fixed sizes of MATEX_RAB_MAX_BYTES and MATEX_CMA_*, without "
       "trials. init: when "
       "a communicator is created, time MPI's allreduce, the small (oneshot / rab) and the rail (rs_ar_ag / "
       "rs_ar_ag_cma) algorithms at five sizes from 64 B to 1 MiB, and have rank 0 broadcast the fastest by "
       "size (5 ms on 2 ranks here; once per layout shape in a process; matex-bench --explain shows it). "
       "file: rank 0 reads MATEX_TUNING_FILE (written by matex-tune) and broadcasts its table, and where "
       "several nodes have some with several ranks also a broadcast table (flat or hier by size; without a "
       "file broadcast runs hier there); a file of "
       "another library version, host kind or layout is refused with a warning naming the mismatch, and init "
       "runs instead. init is opt-in: its few calls time noisily where ranks share cores (docs/algorithms.md)."},
      {"MATEX_TUNING_FILE", ConfigType::kString, "", "", kUnbounded, kUnbounded, kPerRank,
       "With MATEX_CALIBRATE=file or auto: the tuning file rank 0 reads (only rank 0's value counts). Empty: "
       "$XDG_CACHE_HOME/matex/tuning.json, else $HOME/.cache/matex/tuning.json, where matex-tune writes."},
      {"MATEX_RAB_MAX_BYTES", ConfigType::kBytes, "1K", "", 0, kGiB, kSameOnAllRanks,
       "Without a measured table (MATEX_CALIBRATE=off, or auto without a tuning file): up to this message "
       "size auto uses oneshot on one node, and rs_ar_ag or rs_ar_ag_cma above. On several nodes auto uses flat "
       "up to 16 KiB (its data rides in the call check), then rab (reduce, allreduce among leaders, "
       "broadcast) up to this size where it is larger."},
      {"MATEX_CMA_MIN_BYTES", ConfigType::kBytes, "64K", "", 0, 1e18, kSameOnAllRanks,
       "From this size auto uses rs_ar_ag_cma (single copies) where cross-memory attach works; below it "
       "the system calls cost more than the copies they save."},
      {"MATEX_CMA_MAX_BYTES", ConfigType::kBytes, "32M", "", 0, 1e18, kSameOnAllRanks,
       "From this size on the fixed sizes go back to rs_ar_ag for out-of-place calls, whose streaming stores "
       "win once the data no longer fits in the caches; in-place calls keep rs_ar_ag_cma. The ranks of a "
       "node must then agree on in-place. Once the trials (MATEX_ALLREDUCE_TRIALS) settle a size, their "
       "choice serves both placements."},
      {"MATEX_ALLREDUCE_TRIALS", ConfigType::kBool, "1", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "Auto's allreduce is timed on the caller's calls, per size group (four per power of two): each "
       "contender once (the table's or fixed sizes' pick, flat on several nodes, oneshot or rab up to 64 KiB, "
       "rs_ar_ag, rs_ar_ag_cma), then the fastest other and the pick once more; the other serves the group "
       "if it was 3 % faster on the slowest rank, and the trials repeat every 512 calls of a group: "
       "what wins depends on where the cores sit, which can change from run to run. 0, or MATEX_CALIBRATE=off: the "
       "table or the fixed sizes alone decide. Not for the engine's fused calls."},
      {"MATEX_SHM_CHUNK_BYTES", ConfigType::kBytes, "1M", "", 64, kGiB / 4, kSameOnAllRanks,
       "Bytes per pipeline step of the shared-memory transport and of the rails (rounded up to 64 B). "
       "Each step costs three flag waits between cores; 1M keeps a step's slots in L2 and its waits "
       "under 5 % of the time (docs/benchmarks.md)."},
      {"MATEX_CMA_BLOCK_BYTES", ConfigType::kBytes, "128K", "", 4096, kGiB / 4, kSameOnAllRanks,
       "Bytes per single copy of rs_ar_ag_cma on a single node (with several nodes it follows the "
       "rails' steps). Its steps need no waits, so they stay small enough for L2."},
      {"MATEX_SHM_CHUNK_BYTES_OVERSUBSCRIBED", ConfigType::kBytes, "2M", "", 64, kGiB / 4, kSameOnAllRanks,
       "The pipeline step used instead when some node has more ranks than cores: every step then costs "
       "context switches, so fewer, larger steps win."},
      {"MATEX_STREAMING_MIN_BYTES", ConfigType::kBytes, "32M", "", 0, 1e18, kPerRank,
       "Out-of-place allreduces of at least this many bytes write their output with streaming "
       "(non-temporal) stores, which skip reading lines that will not stay in cache anyway."},
      {"MATEX_FUSION_BYTES", ConfigType::kBytes, "32M", "", 0, 1e18, kSameOnAllRanks,
       "The engine fuses ready allreduces of one dtype and op into one collective of up to this many bytes "
       "(0: no fusion). With shared memory on the nodes the collective runs straight on the tensors' own "
       "buffers; otherwise they are packed into a fusion buffer of this size."},
      {"MATEX_FUSION_TENSOR_MAX_BYTES", ConfigType::kBytes, "256K", "", 0, 1e18, kSameOnAllRanks,
       "When fusion must pack (no shared memory on the nodes), only tensors up to this size are fused; larger "
       "ones run alone, since copying them into and out of the fusion buffer costs more memory bandwidth "
       "than their own call's latency. Zero-copy fusion fuses tensors of any size."},
      {"MATEX_CYCLE_MS", ConfigType::kInt, "1", "", 0, 10000, kSameOnAllRanks,
       "An engine with nothing to do still meets the other ranks this often (milliseconds), so that "
       "tensors another rank submits are matched; submitting wakes it at once."},
      {"MATEX_IDLE_CYCLE_MS", ConfigType::kInt, "10", "", 0, 10000, kSameOnAllRanks,
       "Once no rank has had anything for the engine for a second's worth of cycles (1000 at "
       "MATEX_CYCLE_MS=1: model building, tracing, evaluation), the engines meet this often (milliseconds) "
       "instead, which spares the cores; the first tensor after such a pause waits at most this long for the "
       "other ranks. Values up to MATEX_CYCLE_MS, or MATEX_CYCLE_MS=0, turn this off."},
      {"MATEX_STALL_SHUTDOWN_SECONDS", ConfigType::kSeconds, "0", "", 0, 1e6, kSameOnAllRanks,
       "When > 0, an engine tensor that some ranks submitted and others did not for this long fails on "
       "the ranks that submitted it, instead of waiting forever. 0: off."},
      {"MATEX_TIMELINE", ConfigType::kString, "", "", kUnbounded, kUnbounded, kPerRank,
       "Write the engine's Chrome trace (chrome://tracing, Perfetto) to this file: rank 0 only, or every "
       "rank when the name contains %r (replaced by the rank). Empty: no timeline."},
      {"MATEX_SHM_DISABLE", ConfigType::kBool, "0", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "1: never use shared memory; every algorithm falls back to flat MPI."},
      {"MATEX_CMA_DISABLE", ConfigType::kBool, "0", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "1: never move data with cross-memory attach (process_vm_readv/writev); large allreduces then use "
       "the two-copy shared-memory path (rs_ar_ag)."},
      {"MATEX_CUDA_ALGO", ConfigType::kChoice, "auto", "auto|nccl_hier|staged", kUnbounded, kUnbounded,
       kSameOnAllRanks,
       "Collectives on GPU buffers (builds with CUDA): nccl_hier runs NCCL inside the node and MPI across; "
       "staged copies through pinned host memory and runs the host algorithm; auto is nccl_hier where NCCL "
       "works on every node (not when ranks of a node share a GPU), else staged; under auto, reductions NCCL "
       "lacks (int16, uint16, bitwise ops) are staged too, where forced nccl_hier refuses them."},
      {"MATEX_CUDA_AWARE_MPI", ConfigType::kChoice, "auto", "auto|0|1", kUnbounded, kUnbounded, kPerRank,
       "Whether MPI may be handed GPU memory: auto asks MPIX_Query_cuda_support at run time. Used only when "
       "every rank's answer is yes; otherwise transfers across nodes go through the staging pipeline."},
      {"MATEX_CUDA_STAGING_CHUNK_BYTES", ConfigType::kBytes, "4M", "", 4096, kGiB, kSameOnAllRanks,
       "Bytes per step of the pinned staging pipeline (device to host, MPI, host to device, overlapped); "
       "rounded up to 4 KiB."},
      {"MATEX_CUDA_STAGING_SLOTS", ConfigType::kInt, "2", "", 2, 16, kPerRank,
       "Pinned buffers of the staging pipeline, each MATEX_CUDA_STAGING_CHUNK_BYTES: while MPI works on one, "
       "the others are being copied."},
      {"MATEX_ENABLE", ConfigType::kBool, "0", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "Python (pip-installed matex): 1 makes an unmodified TensorFlow script data-parallel under mpirun "
       "or srun, activating when it imports TensorFlow or Keras (docs/tensorflow.md). 0: the startup hook "
       "does nothing but read this variable."},
      {"MATEX_HOROVOD", ConfigType::kBool, "0", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "Python (pip-installed matex): 1 makes `import horovod` load Horovod's API served by matex "
       "(docs/horovod.md), ahead of any real Horovod. Set it with eval \"$(python -m matex horovod-env)\", which "
       "also puts matex's horovodrun on PATH. 0: matex never shadows a real Horovod."},
      {"MATEX_TORCH_CUDA", ConfigType::kChoice, "nccl", "nccl|matex", kUnbounded, kUnbounded, kSameOnAllRanks,
       "With MATEX_ENABLE=1 in a PyTorch job: the backend that CUDA tensors of a group taken over from gloo use; "
       "matex sends them through libmatexcomm's device path."},
      {"MATEX_SEED", ConfigType::kInt, "0", "", -2147483648.0, 2147483647.0, kSameOnAllRanks,
       "With MATEX_ENABLE=1: the seed of Python's and NumPy's generators on every rank, and of the seeds matex "
       "hands out where plain TensorFlow would draw nondeterministic ones (no global and no op seed), so that "
       "ranks draw alike. TensorFlow's own seeds are left as the script sets them."},
      {"MATEX_INPUT_SHARDING", ConfigType::kChoice, "auto", "auto|replicate|statistical", kUnbounded, kUnbounded,
       kSameOnAllRanks,
       "With MATEX_ENABLE=1: how fit, evaluate and predict give each rank its rows of a tf.data or NumPy input. "
       "auto: the per-row maps before batch() run only for this rank's rows where they are pure (the global "
       "batch and the loss curve stay those of one process), else replicate, saying why; replicate: every rank "
       "runs the whole pipeline and keeps its slice; statistical: as auto, but maps that draw random numbers "
       "or keep state are cut too, so their draws differ from one process's (fast, not exact)."},
      {"MATEX_THREADS", ConfigType::kString, "auto", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "CPU threads per rank (matex_thread_budget; with MATEX_ENABLE=1 applied before TensorFlow starts). "
       "auto: ranks of one host whose CPU affinities overlap get disjoint blocks of whole cores, an even "
       "share each, are bound to them, and TensorFlow's intra-op, inter-op and tf.data pools are sized to "
       "match; a rank the launcher bound apart keeps its binding. A number: blocks of that many cores per "
       "rank. off: no binding, TensorFlow's defaults."},
      {"MATEX_VERIFY_LOG", ConfigType::kString, "", "", kUnbounded, kUnbounded, kPerRank,
       "With MATEX_ENABLE=1: rank 0 appends JSON lines to this file: every optimizer step's variable norms, "
       "fit's logs per batch, evaluate's results, and the metric results and TF1 fetches the script reads; "
       "python -m matex.verify sets it."},
      {"MATEX_MPIRUN", ConfigType::kString, "mpirun", "", kUnbounded, kUnbounded, kPerRank,
       "The launcher python -m matex.verify runs the 1-rank and N-rank runs with."},
      {"MATEX_INTERPOSE", ConfigType::kChoice, "auto", "auto|all|off", kUnbounded, kUnbounded, kSameOnAllRanks,
       "The MPI interposer (libmatexcomm_mpi.so, preloaded by matexrun): auto serves the collectives that "
       "libmatexcomm runs with its own algorithms and leaves the rest to MPI, and stands aside in a Python "
       "process that MATEX_ENABLE=1 hands to matex's framework integration; all serves every call that "
       "qualifies, even where libmatexcomm would only call MPI (tests); off passes every call to MPI."},
      {"MATEX_INTERPOSE_MIN_BYTES", ConfigType::kBytes, "0", "", 0, 1e18, kSameOnAllRanks,
       "Under MATEX_INTERPOSE=auto, calls that move fewer bytes go to MPI, whatever libmatexcomm would "
       "choose. 0 (the default): no floor, auto's choice decides alone (docs/mpi-interposer.md)."},
      {"MATEX_INTERPOSE_REPORT", ConfigType::kBool, "0", "", kUnbounded, kUnbounded, kSameOnAllRanks,
       "1: at MPI_Finalize the interposer prints, from rank 0, each collective's calls and bytes summed over the "
       "ranks, how many libmatexcomm served, and why the others went to MPI."},
      {"MATEX_LOG_LEVEL", ConfigType::kChoice, "warn", "error|warn|info|debug", kUnbounded, kUnbounded, kPerRank,
       "Verbosity of messages on stderr; debug adds file:line breadcrumbs to errors."},
  };
  return kConfigTable;
}

}  // namespace matexcomm
