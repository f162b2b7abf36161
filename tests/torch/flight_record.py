"""matex records its calls in torch's flight recorder itself (flight_record.h),
and torch attaches no recording hook to its groups: a dump (the calls torch
users run, backend="matex") holds exactly the calls made, once each, under
torch's names (which its trace analyzer matches across ranks), with their
sizes, sequence numbers and groups, and the groups' status; a collective that
a peer has not joined yet reads "scheduled" on the rank that waits, and
"completed" once it is over. Below torch 2.15, which has no per-backend
recorders, matex records nothing (torch_compat.h): the test skips (77)."""
import json
import sys

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from torch_test_util import finish, start

if tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15):
    print(f"SKIP: torch {torch.__version__} has no per-backend flight recorders (2.15 and later)", flush=True)
    sys.exit(77)

rank, size = start()
assert size >= 2, "needs two ranks"
sub = dist.new_group(list(range(size - 1, -1, -1)))
assert not c10d._world.pg_flight_recorder_hooks, "torch attached its recording hook to a matex group"
sub_name = c10d._get_process_group_name(sub)


def dump():
    return json.loads(torch._C._distributed_c10d._dump_fr_trace_json(backend="matex"))


expected = []  # (profiling name, group, p2p, input sizes, output sizes)
dist.all_reduce(torch.ones(5))
expected.append(("matex:all_reduce", "0", False, [[5]], [[5]]))
dist.broadcast(torch.zeros(2, 3), src=size - 1)
expected.append(("matex:broadcast", "0", False, [[2, 3]], [[2, 3]]))
dist.all_gather_into_tensor(torch.empty(4 * size), torch.ones(4))
expected.append(("matex:_all_gather_base", "0", False, [[4]], [[4 * size]]))
dist.all_reduce(torch.ones(7), group=sub)
expected.append(("matex:all_reduce", sub_name, False, [[7]], [[7]]))
if rank == 0:
    dist.send(torch.ones(3), dst=1)
    expected.append(("matex:send 0->1", "0", True, [[3]], []))
elif rank == 1:
    dist.recv(torch.zeros(3), src=0)
    expected.append(("matex:recv 1<-0", "0", True, [], [[3]]))

# Rank 1 joins only once rank 0 has seen its entry still "scheduled".
store = c10d._get_default_store()
if rank == 1:
    store.wait(["matex_fr_dumped"])
work = dist.all_reduce(torch.ones(1), async_op=True)
expected.append(("matex:all_reduce", "0", False, [[1]], [[1]]))
if rank == 0:
    pending = dump()["entries"][-1]
    store.set("matex_fr_dumped", "1")
    assert pending["profiling_name"] == "matex:all_reduce" and pending["state"] == "scheduled", pending
work.wait()

trace = dump()
entries = trace["entries"]
got = [(e["profiling_name"], e["process_group"][0], e["is_p2p"], e["input_sizes"], e["output_sizes"]) for e in entries]
assert got == expected, f"rank {rank}: the flight recorder holds\n{got}\nexpected\n{expected}"
for e in entries:
    assert e["state"] == "completed" and e["retired"] and e["duration_ms"] is not None, e
world = [e for e in entries if e["process_group"][0] == "0"]
collectives = [e for e in world if not e["is_p2p"]]
assert [e["collective_seq_id"] for e in collectives] == list(range(1, len(collectives) + 1)), collectives
assert [e["op_id"] for e in world] == list(range(1, len(world) + 1)), world
if rank in (0, 1):
    assert [e["p2p_seq_id"] for e in world if e["is_p2p"]] == [1], world
status = trace["pg_status"]["0"]
assert status["last_enqueued_collective"] == status["last_completed_collective"] == str(len(collectives)), status
assert trace["pg_config"]["0"]["ranks"] == str(list(range(size))), trace["pg_config"]
assert trace["pg_config"][sub_name]["ranks"] == str(list(range(size))), trace["pg_config"]
finish("flight_record")
