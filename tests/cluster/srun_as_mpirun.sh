#!/usr/bin/env bash
# An mpirun that starts its ranks with srun on the testbed's Slurm (slurm.sh up), for tools that take an
# mpirun command:  python -m matex.verify -np 2 --mpirun tests/cluster/srun_as_mpirun.sh train.py
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/slurm.sh" mpirun "$@"
