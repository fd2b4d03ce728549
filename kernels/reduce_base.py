"""What the reduce kernels share: each rank's contributions, the numpy reference sums, host rounds.

Beside ``base`` rather than in it: the reference sums come from ``reference``,
which itself builds on ``base``.
"""

from __future__ import annotations

import numpy as np

from .base import Kernel, Params
from .reference import reduce_scatter


def make_contrib(p: Params, seed: int, rnd: int) -> np.ndarray:
    """Reduce kernels: contrib[s, t] is rank s's block (tokens x hidden, flat) for target t."""
    rng = np.random.default_rng([seed, 21, rnd])
    return rng.integers(-50, 50, size=(p.ranks, p.ranks, p.tokens * p.hidden), dtype=np.int32)


class ReduceKernel(Kernel):
    """Shared by the reduce kernels: contributions, reference sums, host rounds."""

    output_kind = "sum"

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        self._contrib = {}

    def contrib(self, g: int) -> np.ndarray:
        if g not in self._contrib:
            c = make_contrib(self.p, self.seed, g)
            self._contrib[g] = c
            for r in range(self.p.ranks):
                self.want[(g, r)] = reduce_scatter(c[:, r]).reshape(self.p.tokens, self.p.hidden)
        return self._contrib[g]

    def manifest_params(self):
        return {**super().manifest_params(), "capacity": None, "expert_sentinel": None}

    def program(self, m, c):
        p = self.p
        for g in range(p.rounds):
            yield from self.host_round(m, c, g)
            self.contrib(g)
            if self.plan.hit("rank-stop", rank=c.rank, round=g):
                m.emit(c, [m.kernel(c, self.kernel_name, True)])
                return  # dies before its pre barrier arrival: every peer waits there forever
            yield from self.body(m, c, g)

    def record(self, m, c, g, region: int) -> None:
        """The rank's output once its post barrier passed (core 0 reads it back)."""
        if c.core == 0:
            self.got[(g, c.rank)] = m.heap.mem[region][c.rank].astype(np.int64).reshape(
                self.p.tokens, self.p.hidden).copy()
