"""The simulated SHMEM machine (see machine.py)."""

from .machine import Barrier, Machine, RunResult, Wait
from .memory import RegionSpec

__all__ = ["Machine", "Wait", "Barrier", "RunResult", "RegionSpec"]
