"""Horovod's reduction constants and what each means for matex.

Scripts compare and pass them as `op=hvd.Average`; the values are Horovod's.
Adasum is refused: matex has no adaptive summation.
"""
import operator

from .refusals import refuse

Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_NAMES = {Average: "average", Sum: "sum", Min: "min", Max: "max", Product: "product"}


def resolve(op, average=None, who="allreduce"):
    """The matex name of a Horovod op ("average", "sum", ...). `average` is
    Horovod's deprecated boolean, which may not be given with op."""
    if average is not None:
        if op is not None:
            raise ValueError(f"horovod.{who}: give op or the deprecated average, not both")
        op = Average if average else Sum
    if op is None:
        op = Average
    if op == Adasum:
        refuse(f"{who}(op=Adasum)", "matex has no adaptive summation; use op=Average or op=Sum")
    if op not in _NAMES:
        raise ValueError(f"horovod.{who}: unknown op {op!r}; use Average, Sum, Min, Max or Product")
    return _NAMES[op]


def split_rows(rows, size):
    """How reducescatter splits a first dimension of `rows` across `size`
    ranks: as evenly as possible, the first rows % size ranks one more."""
    base, extra = divmod(rows, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def is_rank(value, size):
    """Whether value is a rank of a job of size ranks: any integer (a NumPy one too), not a bool."""
    if isinstance(value, bool):
        return False
    try:
        value = operator.index(value)
    except TypeError:
        return False
    return 0 <= value < size
