#include "world.h"

#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <mutex>

#include "backend.h"

namespace matex_torch {

namespace {

struct World {
  std::mutex mutex;
  matex_comm_t comm = nullptr;
  bool shut_down = false;
  WorldFacts facts{0, 1, 0};
  struct Entry {
    c10::weak_intrusive_ptr<MatexBackend> backend;
    std::function<bool()> orphan;  // set once the backend was destroyed unclosed
  };
  std::vector<Entry> backends;  // in creation order: index = position
  bool abandoned = false;
};

World& world() {
  static World* instance = new World;  // never destroyed: backends may close during teardown
  return *instance;
}

// Callers hold world().mutex.
matex_comm_t world_comm_locked() {
  World& w = world();
  TORCH_CHECK(!w.shut_down, "matex: the backend was shut down in this process and cannot start again (MPI cannot "
              "be initialized twice)");
  if (w.comm != nullptr) return w.comm;
  check_status(matex_init(&w.comm), "matex_init (MPI start-up)");
  check_status(matex_comm_rank(w.comm, &w.facts.rank), "matex_comm_rank");
  check_status(matex_comm_size(w.comm, &w.facts.size), "matex_comm_size");
  int provided = 0;
  MPI_Query_thread(&provided);
  w.facts.thread_level_multiple = provided == MPI_THREAD_MULTIPLE ? 1 : 0;
  return w.comm;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  TORCH_CHECK(fd >= 0, "matex: socket() failed while looking for a free port: ", std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  TORCH_CHECK(port > 0, "matex: could not find a free TCP port for the rendezvous");
  return port;
}

}  // namespace

WorldFacts world_facts() {
  std::lock_guard<std::mutex> lock(world().mutex);
  world_comm_locked();
  return world().facts;
}

Rendezvous agree_rendezvous() {
  std::lock_guard<std::mutex> lock(world().mutex);
  matex_comm_t comm = world_comm_locked();
  // Rank 0 sends its host name and a port that was free a moment ago.
  struct {
    char host[256];
    int32_t port;
  } message{};
  char mine[256] = {0};
  ::gethostname(mine, sizeof mine - 1);
  if (world().facts.rank == 0) {
    std::memcpy(message.host, mine, sizeof mine);
    message.port = free_port();
  }
  check_status(matex_broadcast(comm, &message, sizeof message, MATEX_UINT8, 0), "the rendezvous broadcast");
  int same_host = std::strncmp(message.host, mine, sizeof mine) == 0 ? 1 : 0;
  int all_same = 0;
  check_status(matex_allreduce(comm, &same_host, &all_same, 1, MATEX_INT32, MATEX_MIN), "the rendezvous allreduce");
  return {all_same ? std::string("127.0.0.1") : std::string(message.host), message.port};
}

c10::intrusive_ptr<c10d::Backend> create_backend(int group_rank, int group_size,
                                                 const std::vector<int64_t>& global_ranks, double timeout_seconds,
                                                 const std::string& group_name) {
  std::lock_guard<std::mutex> lock(world().mutex);
  matex_comm_t parent = world_comm_locked();
  const WorldFacts& facts = world().facts;
  std::vector<int> members;
  if (global_ranks.empty()) {
    TORCH_CHECK(group_size == facts.size && group_rank == facts.rank, "matex: torch.distributed counts rank ",
                group_rank, " of ", group_size, " but MPI counts rank ", facts.rank, " of ", facts.size,
                ". The matex backend needs one process per MPI rank: launch with `mpirun -np ", group_size,
                " python script.py` (or srun); torchrun and mp.spawn start processes that MPI does not know");
    for (int r = 0; r < group_size; ++r) members.push_back(r);
  } else {
    TORCH_CHECK(static_cast<int>(global_ranks.size()) == group_size, "matex: group ", group_name, " lists ",
                global_ranks.size(), " ranks but has size ", group_size);
    for (int64_t r : global_ranks) members.push_back(static_cast<int>(r));
    TORCH_CHECK(group_rank >= 0 && group_rank < group_size && members[group_rank] == facts.rank, "matex: group ",
                group_name, " says this process is its rank ", group_rank, " but this is MPI rank ", facts.rank);
  }
  TORCH_CHECK(facts.thread_level_multiple, "matex: MPI was initialized without MPI_THREAD_MULTIPLE, which the "
              "backend needs (its groups run on their own threads); initialize MPI with MPI_THREAD_MULTIPLE or let "
              "matex initialize it");
  matex_comm_t comm = nullptr;
  check_status(matex_comm_create_from_ranks(parent, members.data(), static_cast<int>(members.size()), &comm),
               "creating the communicator of group " + group_name);
  // Ten years stands for "no limit" (larger values would overflow the clocks).
  const double seconds = std::min(std::max(timeout_seconds, 0.001), 10.0 * 365 * 24 * 3600);
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
  const uint64_t index = world().backends.size();
  auto backend =
      c10::make_intrusive<MatexBackend>(comm, group_rank, group_size, std::move(members), timeout, group_name, index);
  world().backends.push_back({c10::weak_intrusive_ptr<MatexBackend>(backend), nullptr});
  return backend;
}

void defer_close(uint64_t index, std::function<bool()> closer) {
  std::lock_guard<std::mutex> lock(world().mutex);
  if (index < world().backends.size() && !world().shut_down) {
    world().backends[index].orphan = std::move(closer);
    return;
  }
  // After shutdown() nothing is collective any more: leave it to the exit.
}

void note_abandoned() {
  std::lock_guard<std::mutex> lock(world().mutex);
  world().abandoned = true;
}

void shutdown() {
  std::vector<World::Entry> backends;
  {
    std::lock_guard<std::mutex> lock(world().mutex);
    if (world().shut_down) return;
    world().shut_down = true;
    backends.swap(world().backends);
  }
  bool abandoned = false;
  for (World::Entry& entry : backends) {
    if (entry.orphan) {
      abandoned = !entry.orphan() || abandoned;
    } else if (auto backend = entry.backend.lock()) {
      backend->close();
    }
  }
  std::lock_guard<std::mutex> lock(world().mutex);
  if (abandoned || world().abandoned) {
    std::fprintf(stderr, "matex: a process group is stuck in a collective whose wait expired; MPI cannot shut "
                         "down cleanly, so the job is ended\n");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (world().comm != nullptr) matex_finalize(&world().comm);
}

}  // namespace matex_torch
