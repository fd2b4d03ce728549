"""The rules: one module per rule (``rules/mtNNN_name.py``), discovered here.

Importing this package is cheap; ``registry()`` imports the rule modules (they
import numpy, never numba, at import time).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from .base import Confidence, Family, Hit, Rule, RuleContext, Severity

__all__ = ["Confidence", "Family", "Hit", "Rule", "RuleContext", "Severity", "registry"]


@cache
def registry() -> dict[str, type[Rule]]:
    """Every rule by code, in code order."""
    found: dict[str, type[Rule]] = {}
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("mt"):
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule \
                    and obj.__module__ == module.__name__:
                if obj.code in found:
                    raise RuntimeError(f"duplicate rule code {obj.code}")
                found[obj.code] = obj
    return dict(sorted(found.items()))
