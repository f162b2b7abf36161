"""Horovod's Python API, served by matex (docs/horovod.md).

This package stands in for `horovod` when a job opts in (MATEX_HOROVOD=1, or
horovodrun from matex): `import horovod.torch as hvd`, `horovod.tensorflow`,
`horovod.tensorflow.keras` and `horovod.keras` then run on libmatexcomm's
engine, with Horovod's semantics: each rank trains on its own shard, and
gradients are averaged across ranks. It does not import or need the real
Horovod. A call it does not serve raises at once, naming it.
"""
__version__ = "0.28.1"  # the Horovod API this package serves
