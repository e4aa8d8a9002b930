"""Where the work of a run happens: an `Executor` takes (target, repetition) groups from the runner and runs
each one somewhere. `local` runs them here, one after another; a batch scheduler (Slurm) can be another
executor without the runner changing."""

from dbsweep.hosts.base import Executor, GroupJob
from dbsweep.hosts.local import Local

__all__ = ["Executor", "GroupJob", "Local"]
