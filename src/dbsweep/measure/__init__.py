"""Samplers that watch every benchmark step: host (vmstat), device (iostat -x), server tree, client.

Typical use by the runner::

    with Sampler(instance.pid, instance.datadir) as s:
        client = spawn(...)
        s.attach_client(client.pid)
        ...  # warm-up, then the measured part from t0 to t1 (time.monotonic())
    m = s.window(t0, t1)
    costs = per_op(m, ops)  # cpu/o, cs/o, r/o, rKB/o, wKB/o, ...
"""

from .device import BlockDevice, DeviceDelta, DiskSnapshot, device_delta, find_device, snapshot_device
from .host import HostDelta, HostSnapshot, host_delta, host_ncpu, snapshot_host
from .perop import KEYS as PER_OP_KEYS
from .perop import per_op
from .sampler import Interval, Sampler, Snapshot
from .server import ProcessTree, TreeDelta, TreeSnapshot, tree_delta
from .sizes import dir_size
from .step import StepMeasures

__all__ = [
    "PER_OP_KEYS",
    "BlockDevice",
    "DeviceDelta",
    "DiskSnapshot",
    "HostDelta",
    "HostSnapshot",
    "Interval",
    "ProcessTree",
    "Sampler",
    "Snapshot",
    "StepMeasures",
    "TreeDelta",
    "TreeSnapshot",
    "device_delta",
    "dir_size",
    "find_device",
    "host_delta",
    "host_ncpu",
    "per_op",
    "snapshot_device",
    "snapshot_host",
    "tree_delta",
]
