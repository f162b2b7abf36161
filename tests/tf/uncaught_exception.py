"""Under MATEX_ENABLE=1, rank 1 dies with an exception while rank 0 waits for
its tensor: the job must end at once (non-zero) instead of hanging."""
import sys

import tensorflow as tf

import matex

if matex.rank() == 1:
    raise RuntimeError("rank 1 gives up on purpose")
matex.allreduce(tf.ones([4]), op="sum")  # rank 1 never sends this one
print("rank 0 finished: the job should have ended before this line", flush=True)
sys.exit(0)
