"""Subgroups (new_group, members-only creation, ranks in any order), send and
recv (order on one tag, tags kept apart, any source, a ring through
batch_isend_irecv), mismatched calls inside a node, and the timeout: a wait that expires raises an error
naming the collective instead of hanging. Run on 3 and 4 ranks."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from torch_test_util import check_equal, finish, start, value

rank, size = start()

# ---- subgroups: every rank calls new_group, only members build a backend ----
shapes = [[0, size - 1], [size - 1], list(range(size - 1, -1, -1)), [r for r in range(size) if r % 2 == 1]]
groups = [dist.new_group(ranks) for ranks in shapes]
for ranks, group in zip(shapes, groups):
    if rank not in ranks:
        assert group == dist.GroupMember.NON_GROUP_MEMBER, f"rank {rank} got a group it is not in: {ranks}"
        continue
    assert group._get_backend(torch.device("cpu")).name() == "matex"
    group_rank = dist.get_rank(group)
    assert group_rank == sorted(ranks).index(rank), (ranks, group_rank)
    t = value(rank, 9, torch.float32)
    dist.all_reduce(t, group=group)
    check_equal(t, sum(value(r, 9, torch.float32) for r in ranks), f"all_reduce on group {ranks}")
    outs = [torch.empty(4, dtype=torch.int64) for _ in ranks]
    dist.all_gather(outs, value(rank, 4, torch.int64), group=group)
    for i, r in enumerate(sorted(ranks)):
        check_equal(outs[i], value(r, 4, torch.int64), f"all_gather on group {ranks} from {r}")
    src = max(ranks)
    b = value(src, 5, torch.int32) if rank == src else torch.zeros(5, dtype=torch.int32)
    dist.broadcast(b, src=src, group=group)
    check_equal(b, value(src, 5, torch.int32), f"broadcast on group {ranks}")

# ---- send/recv: several messages on one tag arrive in order, tags apart ----
nxt, prv = (rank + 1) % size, (rank - 1) % size
sends = [dist.isend(value(rank, 3 + k, torch.float64, salt=k), dst=nxt, tag=7) for k in range(4)]
sends.append(dist.isend(torch.full((2,), float(rank)), dst=nxt, tag=9))
got9 = torch.empty(2)
dist.recv(got9, src=prv, tag=9)  # the tag-9 message, though sent last
check_equal(got9, torch.full((2,), float(prv)), "recv on tag 9")
for k in range(4):
    got = torch.empty(3 + k, dtype=torch.float64)
    dist.recv(got, src=prv, tag=7)
    check_equal(got, value(prv, 3 + k, torch.float64, salt=k), f"message {k} on tag 7 in order")
for work in sends:
    work.wait()

# recv from any source reports the sender. A tag of its own: on tag 0 it
# could match a later message (the ring's) of a rank that has moved on.
if rank == 0:
    seen = set()
    for _ in range(size - 1):
        got = torch.empty(6, dtype=torch.int16)
        sender = dist.recv(got, tag=5)
        check_equal(got, value(sender, 6, torch.int16), f"recv from any source ({sender})")
        seen.add(sender)
    assert seen == set(range(1, size)), seen
else:
    dist.send(value(rank, 6, torch.int16), dst=0, tag=5)

# A ring through batch_isend_irecv: every isend must return at once.
big = value(rank, 1 << 16, torch.float32)
incoming = torch.empty_like(big)
ops = [dist.P2POp(dist.isend, big, nxt), dist.P2POp(dist.irecv, incoming, prv)]
for work in dist.batch_isend_irecv(ops):
    work.wait()
check_equal(incoming, value(prv, 1 << 16, torch.float32), "batch_isend_irecv ring")

# ---- mismatches inside a node: both ranks raise, naming the other ----
pair = dist.new_group([0, 1])  # one virtual node in both 2,1 and 3,1
if rank in (0, 1):
    for what, call in (("count", lambda: dist.all_reduce(torch.ones(4 + rank), group=pair)),
                       ("op", lambda: dist.all_reduce(torch.ones(4), group=pair,
                                                      op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX))):
        try:
            call()
            raise AssertionError(f"rank {rank}: a different {what} on the other rank did not raise")
        except RuntimeError as error:
            assert "ranks disagree" in str(error) and f"world rank {1 - rank}" in str(error), error

# ---- timeout: rank 0 comes late; the others' waits expire and say why ----
# (A synchronous call that overruns ends the job instead: sync_timeout.py.)
late = dist.new_group(list(range(size)), timeout=timedelta(seconds=2))
t = torch.ones(3)
if rank == 0:
    time.sleep(5)
    dist.all_reduce(t, group=late)
else:
    start_time = time.monotonic()
    try:
        dist.all_reduce(t, group=late, async_op=True).wait()
        raise AssertionError(f"rank {rank}: the all_reduce did not time out")
    except RuntimeError as error:
        waited = time.monotonic() - start_time
        text = str(error)
        assert "allreduce" in text and "did not complete within 2" in text, text
        assert waited < 4.5, f"the timeout of 2 s took {waited:.1f} s"
    try:
        dist.all_reduce(torch.ones(1), group=late)
        raise AssertionError("a group whose wait expired was used again without an error")
    except RuntimeError as error:
        assert "unusable" in str(error), error

finish("groups_p2p")
