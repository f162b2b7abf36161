"""horovod.torch's process sets and sparse reductions (served by matex), on
exact inputs against references every rank computes for every rank:
- static sets (hvd.init(process_sets=[...])) and dynamic ones (add_process_set,
  remove_process_set), their size(), rank() and included(), duplicates and bad
  ranks refused, a rank outside a set refused by name;
- every collective restricted to a set (the even ranks, the odd ranks, and a
  set of one rank), with global root ranks, and averages over the set's size;
- unnamed calls inside sets that run different numbers of them;
- DistributedOptimizer over a set: members average among themselves, the
  others step alone;
- sparse_allreduce_async (sum and average, empty tensors) and a sparse
  embedding trained with SparseAdam, sparse and sparse_as_dense.
Run under mpirun with MATEX_HOROVOD=1 (tests/horovod/CMakeLists.txt)."""
import numpy as np
import torch

import horovod.torch as hvd
from hvd_test_util import check_equal, expect_error, rank_input, rows_input

hvd.init()
rank, size = hvd.rank(), hvd.size()
everyone = range(size)
t = lambda a, dtype=torch.float32: torch.tensor(np.asarray(a), dtype=dtype)  # noqa: E731

# ---- registration ---------------------------------------------------------------------------------------
evens, odds = [r for r in everyone if r % 2 == 0], [r for r in everyone if r % 2 == 1]
first = hvd.ProcessSet([0])  # static: hvd.init registers the sets it is given, on every rank alike
hvd.init(process_sets=[first])
assert first.process_set_id is not None and first.size() == 1 and first.included() == (rank == 0)
assert first.rank() == (0 if rank == 0 else None)
assert hvd.global_process_set.process_set_id == 0 and hvd.global_process_set.ranks == list(everyone)
if rank == 0:
    check_equal(hvd.allreduce(t([3.0]), process_set=first), [3.0], "a set of one rank")
first_id = first.process_set_id
assert hvd.remove_process_set(first)  # [0] is the even ranks' set on 2 ranks: it may be added again below
even_set = hvd.add_process_set(evens)
odd_set = hvd.add_process_set(hvd.ProcessSet(odds)) if odds else None
mine, members = (even_set, evens) if rank % 2 == 0 else (odd_set, odds)
assert mine.included() and mine.size() == len(members) and mine.rank() == members.index(rank)
ids = hvd.allgather_object([first_id, even_set.process_set_id])
assert all(i == ids[0] for i in ids), f"set ids differ between ranks: {ids}"
expect_error(lambda: hvd.add_process_set(evens), "duplicate process set", kinds=(ValueError,))
expect_error(lambda: hvd.add_process_set(list(everyone)), "duplicate process set", kinds=(ValueError,))
expect_error(lambda: hvd.add_process_set([0, size]), f"{[size]} are not", kinds=(ValueError,))
expect_error(lambda: hvd.add_process_set([0, 0]), "distinct ranks", kinds=(ValueError,))
if size > 1:
    other = odd_set if rank % 2 == 0 else even_set
    expect_error(lambda: hvd.allreduce(t([1.0]), process_set=other), f"rank {rank} is not in", kinds=(ValueError,))
    outsider = next(r for r in everyone if r not in members)
    expect_error(lambda: hvd.broadcast(t([1.0]), root_rank=outsider, process_set=mine, name="ps.badroot"),
                 "is not in the process set", kinds=(ValueError,))

# ---- collectives inside a set -------------------------------------------------------------------------------
for count in (0, 1, 7, 13):
    inputs = [rank_input(r, count) for r in everyone]
    in_set = [inputs[r] for r in members]
    check_equal(hvd.allreduce(t(inputs[rank]), op=hvd.Sum, process_set=mine), np.sum(in_set, 0),
                f"set sum, count {count}")
    check_equal(hvd.allreduce(t(inputs[rank], torch.float64), process_set=mine), np.mean(in_set, 0) if count else
                np.zeros(0), f"set average, count {count}", rtol=1e-12)
    check_equal(hvd.allreduce(t(inputs[rank] - 6, torch.int32), process_set=mine),
                np.trunc(np.sum(np.array(in_set) - 6, 0) / len(members)), f"set integer average, count {count}")
    reduced = hvd.grouped_allreduce([t(inputs[rank]), t(inputs[rank][:1])], op=hvd.Sum, process_set=mine)
    check_equal(reduced[1], np.sum(in_set, 0)[:1], f"set grouped allreduce, count {count}")
    # ragged rows: rank r gives r + 1 rows
    gathered = hvd.allgather(t(rows_input(rank, rank + 1, 3)), process_set=mine)
    check_equal(gathered, np.concatenate([rows_input(r, r + 1, 3) for r in members]), f"set allgather {count}")
    for root in members:  # global ranks, as Horovod takes them
        check_equal(hvd.broadcast(t(inputs[rank]), root_rank=root, process_set=mine), inputs[root],
                    f"set broadcast from {root}, count {count}")
rows = rows_input(rank, 2 * len(members) + 1, 2)  # a row count that does not divide by the set's size
shares = [len(range(i, 2 * len(members) + 1, len(members))) for i in range(len(members))]
start = sum(shares[:members.index(rank)])
check_equal(hvd.reducescatter(t(rows), op=hvd.Sum, process_set=mine),
            np.sum([rows_input(r, 2 * len(members) + 1, 2) for r in members], 0)[start:start + shares[members.index(rank)]],
            "set reducescatter")
sent = t(np.arange(len(members) * 2) + 100 * rank)
received = hvd.alltoall(sent, process_set=mine)
check_equal(received, np.concatenate([np.arange(len(members) * 2)[2 * members.index(rank):2 * members.index(rank) + 2]
                                      + 100 * r for r in members]), "set alltoall")
assert hvd.broadcast_object({"from": members[0]} if rank == members[0] else None, root_rank=members[0],
                            process_set=mine) == {"from": members[0]}
assert hvd.allgather_object(rank, process_set=mine) == members
hvd.barrier(process_set=mine)
# Unnamed calls inside sets that make different numbers of them: names match within each set only.
for _ in range(1 + rank % 2):
    check_equal(hvd.allreduce(t([1.0]), op=hvd.Sum, process_set=mine), [len(members)], "unnamed set calls")
check_equal(hvd.allreduce(t([1.0]), op=hvd.Sum), [size], "an unnamed global call after unequal set calls")
# Gradients flow through a set's allreduce: d(sum over the set)/dx is the set's size, averaged by Horovod's rule.
x = t([1.0, 2.0]).requires_grad_()
hvd.allreduce(x, op=hvd.Sum, process_set=mine).sum().backward()
check_equal(x.grad, [len(members)] * 2, "the gradient of a set's sum")

# ---- DistributedOptimizer over the even ranks: the odd ranks step alone ---------------------------------------
data = [(rows_input(r, 4, 3) / 10.0, rows_input(r, 4, 1, salt=5) / 10.0) for r in everyone]
model = torch.nn.Linear(3, 1, bias=False).double()
with torch.no_grad():
    model.weight.copy_(t([[0.5, -0.25, 0.125]], torch.float64))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                     named_parameters=model.named_parameters(), process_set=even_set)
x, y = data[rank]
optimizer.zero_grad()
((model(t(x, torch.float64)) - t(y, torch.float64)) ** 2).mean().backward()
optimizer.step()
w = np.array([0.5, -0.25, 0.125])
gradient = lambda r: 2 * data[r][0].T @ (data[r][0] @ w - data[r][1][:, 0]) / 4  # noqa: E731
expected = w - 0.1 * (np.mean([gradient(r) for r in evens], 0) if rank % 2 == 0 else gradient(rank))
check_equal(model.weight.detach()[0], expected, "DistributedOptimizer over a process set", rtol=1e-12)

# ---- removal ---------------------------------------------------------------------------------------------
assert hvd.remove_process_set(even_set) and even_set.process_set_id is None and even_set.size() is None
assert not hvd.remove_process_set(even_set) and not hvd.remove_process_set(hvd.global_process_set)
expect_error(lambda: hvd.allreduce(t([1.0]), process_set=even_set), "is not registered", kinds=(ValueError,))
again = hvd.add_process_set(evens)  # the same ranks may form a set again once removed
check_equal(hvd.allreduce(t([1.0]), op=hvd.Sum, process_set=again) if rank % 2 == 0 else t([len(evens)]),
            [len(evens)], "a set added again")
mine = again if rank % 2 == 0 else mine

# ---- sparse allreduce --------------------------------------------------------------------------------------
def sparse_input(r, rows):
    """Rank r's sparse rows: a pattern that overlaps between ranks, so coordinates repeat."""
    dense = np.zeros((rows, 3))
    for i in range(rows):
        if (i + r) % 3 == 0:
            dense[i] = rows_input(r, 1, 3, salt=i)[0]
    return dense


for rows_count in (0, 1, 11):
    dense = [sparse_input(r, rows_count) for r in everyone]
    for op, reference in ((hvd.Sum, np.sum(dense, 0)), (hvd.Average, np.mean(dense, 0) if rows_count else
                                                            np.zeros((0, 3)))):
        wait = hvd.sparse_allreduce_async(t(dense[rank], torch.float64).to_sparse(), name=f"sparse.{rows_count}",
                                          op=op)
        result = wait()
        assert result.is_sparse
        check_equal(result.to_dense(), reference, f"sparse allreduce of {rows_count} rows", rtol=1e-12)
    in_set = hvd.sparse_allreduce_async(t(dense[rank], torch.float64).to_sparse(), f"sparse.set.{rows_count}",
                                        hvd.Sum, process_set=mine)()
    check_equal(in_set.to_dense(), np.sum([dense[r] for r in members], 0), f"sparse allreduce in a set {rows_count}")

# A sparse embedding trained with SparseAdam (which takes sparse gradients only), both ways Horovod offers:
# every rank ends with the same weights, those of one process that averaged every rank's gradient.
lookups = [torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]]) if r % 2 == 0 else torch.tensor([[1, 3, 4], [4, 7, 9]])
           for r in everyone]
for sparse_as_dense in (False, True):
    torch.manual_seed(7)
    embedding = torch.nn.Embedding(10, 3, sparse=True).double()
    reference = torch.nn.Embedding(10, 3, sparse=True).double()
    reference.load_state_dict(embedding.state_dict())
    optimizer = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(embedding.parameters()), lr=0.1),
                                         named_parameters=embedding.named_parameters(),
                                         sparse_as_dense=sparse_as_dense)
    for step in range(2):
        optimizer.zero_grad()
        embedding(lookups[rank]).sum().backward()
        optimizer.step()
    plain = torch.optim.SparseAdam(list(reference.parameters()), lr=0.1)
    for step in range(2):
        plain.zero_grad()
        gradients = []
        for r in everyone:
            reference.zero_grad()
            reference(lookups[r]).sum().backward()
            gradients.append(reference.weight.grad.to_dense())
        reference.weight.grad = (sum(gradients) / size).to_sparse()
        plain.step()
    check_equal(embedding.weight.detach(), reference.weight.detach(),
                f"SparseAdam embedding, sparse_as_dense={sparse_as_dense}", rtol=1e-12)
print(f"rank {rank}: horovod.torch process sets and sparse checks passed on {size} ranks", flush=True)
