"""Rank 0 dies in the middle of writing a model file (SIGKILL after the
first part of the .keras archive is written). Run under MATEX_ENABLE=1 by
kill_rank0_save.sh, which checks that every rank ends with an error within
MATEX_TIMEOUT_SECONDS and that the file under the final name is still the
whole one the first save wrote.

Argument: the directory to write into."""
import os
import signal
import sys
import zipfile

import numpy as np
import keras

directory = sys.argv[1]
target = os.path.join(directory, "model.keras")
keras.utils.set_random_seed(1)
model = keras.Sequential([keras.Input(shape=(64,)), keras.layers.Dense(256), keras.layers.Dense(8)])
model.compile(optimizer="adam", loss="mse")
model.save(target)  # a whole first version
print("first save done", flush=True)
model.fit(np.ones((32, 64), "float32"), np.zeros((32, 8), "float32"), epochs=1, verbose=0)

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")))
if rank == 0:
    write = zipfile.ZipFile.writestr

    def die_after_first_part(self, *args, **kwargs):
        write(self, *args, **kwargs)
        self.fp.flush()
        print(f"rank 0 dies while writing {self.filename}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    zipfile.ZipFile.writestr = die_after_first_part
model.save(target)  # rank 0 is killed inside; the other ranks wait for it
print(f"rank {rank}: the second save returned, which it must not", flush=True)
