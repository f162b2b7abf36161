"""horovodrun, served by matex: Horovod's command line turned into one
mpirun command (runner/launch.py). matex never launches processes itself."""
from ..common.refusals import not_served

run = not_served("horovod.runner.run", "programmatic launch is not served; start the job with horovodrun or mpirun")
