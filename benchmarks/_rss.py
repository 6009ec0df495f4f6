"""Peak memory of a benchmark's child process. No heavy import here: a child measured for one
library must not load another.

Linux carries ``ru_maxrss`` over from the parent into a child, so a measured child is started
through ``LAUNCHER``, a small process that runs ``argv[1:]`` and exits with its status.
"""

from __future__ import annotations

import resource
import sys

__all__ = ["LAUNCHER", "peaks_mb"]

LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def peaks_mb():
    """(ru_maxrss, VmHWM) of this process in MB (VmHWM None where /proc is absent)."""
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ru = ru / 2**20 if sys.platform == "darwin" else ru / 1024.0
    hwm = None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return ru, hwm
