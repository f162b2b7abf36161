"""Subgroups (new_group, members-only creation, ranks in any order, split_group), send and
recv (order on one tag, tags kept apart, any source, a ring through
batch_isend_irecv), mismatched calls inside a node, and the timeout: a wait that expires raises an error
naming the collective instead of hanging. Run on 3 and 4 ranks."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from torch_test_util import check_equal, finish, start, value

# Bound to a device, as init_process_group(device_id=...) does: c10d then
# builds new_group on members through the parent (split_from), and
# non-members call perform_nocolor_split on it. The other tests run unbound.
rank, size = start(device_id=torch.device("cpu:0"))

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

# ---- split_group: even ranks (listed backwards: the order gives the group
# ranks) and odd ranks of the world, then a split of a split, in which some
# ranks are in no split and get no group ----
assert dist.group.WORLD._get_backend(torch.device("cpu")).supports_splitting
halves = [[r for r in range(size) if r % 2 == 0][::-1], [r for r in range(size) if r % 2 == 1]]
half = dist.split_group(split_ranks=halves, timeout=timedelta(seconds=60))
mine = halves[rank % 2]
assert dist.get_world_size(half) == len(mine) and dist.get_rank(half) == mine.index(rank), (mine, rank)
t = value(rank, 11, torch.float64)
dist.all_reduce(t, group=half)
check_equal(t, sum(value(r, 11, torch.float64) for r in mine), f"all_reduce on split {mine}")
outs = [torch.empty(3, dtype=torch.int16) for _ in mine]
dist.all_gather(outs, value(rank, 3, torch.int16), group=half)
for i, r in enumerate(mine):
    check_equal(outs[i], value(r, 3, torch.int16), f"all_gather on split {mine} from {r}")
# Split the half again, by its own group ranks: its first member alone, and
# the rest but its last member (on 3 and 4 ranks the even half is [2, 0]).
inner = [[0], list(range(1, len(mine) - 1))] if len(mine) > 2 else [[0]]
quarter = dist.split_group(half, split_ranks=inner)
position = mine.index(rank)
members = next((split for split in inner if position in split), None)
if members is None:
    assert quarter == dist.GroupMember.NON_GROUP_MEMBER, f"rank {rank} got a split it is not in"
else:
    t = value(rank, 2, torch.int32)
    dist.all_reduce(t, group=quarter, op=dist.ReduceOp.MAX)
    check_equal(t, torch.stack([value(mine[p], 2, torch.int32) for p in members]).amax(0),
                f"all_reduce MAX on split {members} of {mine}")

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

# ---- mismatches across nodes (the last rank is alone on the last node in
# 2,1 and 3,1): another op, and a skipped call, raise on both ranks ----
across = dist.new_group([0, size - 1])
if rank in (0, size - 1):
    other = 1 if rank == 0 else 0  # the peer's rank in the group
    try:
        dist.all_reduce(torch.ones(4), group=across, op=dist.ReduceOp.SUM if rank == 0 else dist.ReduceOp.MAX)
        raise AssertionError(f"rank {rank}: a different op on another node did not raise")
    except RuntimeError as error:
        text = str(error)
        assert "ranks disagree" in text and "op=sum" in text and "op=max" in text and f"rank {other} (" in text, text
    # The last rank skips an all_reduce: its barrier meets rank 0's all_reduce.
    try:
        if rank == 0:
            dist.all_reduce(torch.ones(2), group=across)
        else:
            dist.barrier(group=across)
        raise AssertionError(f"rank {rank}: a call skipped on another node did not raise")
    except RuntimeError as error:
        assert "ranks disagree" in str(error) and "barrier" in str(error), error
    t = value(rank, 5, torch.float32)
    dist.all_reduce(t, group=across)  # still usable
    check_equal(t, value(0, 5, torch.float32) + value(size - 1, 5, torch.float32), "all_reduce after mismatches")

# ---- timeout: rank 0 comes late; the others' waits expire and say why ----
# (A synchronous call that overruns ends the job instead: sync_timeout.py.)
late = dist.new_group(list(range(size)), timeout=timedelta(seconds=3))
t = torch.ones(3)
if rank == 0:
    time.sleep(12)  # 4 timeouts late: the others' waits expire long before, however busy the machine
    dist.all_reduce(t, group=late)
else:
    start_time = time.monotonic()
    try:
        dist.all_reduce(t, group=late, async_op=True).wait()
        raise AssertionError(f"rank {rank}: the all_reduce did not time out")
    except RuntimeError as error:
        waited = time.monotonic() - start_time
        text = str(error)
        assert "allreduce" in text and "did not complete within 3" in text, text
        assert waited < 7.5, f"the timeout of 3 s took {waited:.1f} s"
    try:
        dist.all_reduce(torch.ones(1), group=late)
        raise AssertionError("a group whose wait expired was used again without an error")
    except RuntimeError as error:
        assert "unusable" in str(error), error

finish("groups_p2p")
