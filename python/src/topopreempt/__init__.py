# SPDX-License-Identifier: MIT
"""topopreempt: topology-aware preemption planning for GPU clusters.

Which running workloads must be preempted so that a higher-priority workload can start on a
topology-valid placement? Exact solvers (branch-and-bound, knapsack), greedy, the Kubernetes
and paper baselines, a plan verifier, transactions, a preemptor queue, JSON snapshots and a
discrete-event simulator, over the header-only C++ library. See docs/python.md.
"""

from ._core import *  # noqa: F401,F403  (the extension is the API; see _core.pyi)
from ._core import __version__, shapes, sim  # noqa: F401
