"""A synchronous collective that a rank never joins: the waiting rank is
blocked inside it and cannot raise, so once the group's timeout passes the
job must end with an error naming the collective (as NCCL's watchdog does),
not hang. Run by expect_job_error.sh on 2 ranks."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("matex", timeout=timedelta(seconds=3))
if dist.get_rank() == 1:
    dist.all_reduce(torch.ones(4))  # rank 0 never joins
else:
    # Rank 0's barrier never completes either; entering it 30 s later (10 times the timeout) makes rank
    # 1's allreduce the first to time out, the collective the test expects named, however busy the
    # machine (else which watchdog fires first is a race). The job ends at rank 1's timeout, not after.
    time.sleep(30.0)
dist.barrier()
