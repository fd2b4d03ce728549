"""Helpers that turn the rows a rule's passes found into hits.

Grouping a repeated defect, the confidence and the gap note of a finding that
leans on events a partial trace may lack, and the names messages use. Rules
import this module as ``H`` (``H.launch_gap``); it is the rules' side, never an
analysis (``rules/analysis/`` computes, this module words).
"""

from __future__ import annotations

import numpy as np

from ingest.contract import COLUMN, COMMON_OPTIONAL, FIELDS, Kind

from .analysis.groups import group_columns


def groups(rows: np.ndarray, *ident: np.ndarray) -> list[np.ndarray]:
    """``rows`` split by equal ``ident`` columns (one value per row), groups in order of first row.

    The rules of a repeated defect (one missing drain hit by a loop) report a
    group once, at its first row, with the count: one cause, one root.
    """
    if not len(rows):
        return []
    _, first, inv, _ = group_columns([np.asarray(c, np.int64) for c in ident])
    order = np.argsort(inv, kind="stable")
    bounds = np.searchsorted(inv[order], np.arange(len(first) + 1))
    parts = [rows[order[bounds[g]:bounds[g + 1]]] for g in range(len(first))]
    return [parts[g] for g in np.argsort(first, kind="stable")]


def by_site(trace, rows: np.ndarray) -> list[np.ndarray]:
    """``groups`` of ``rows`` per (rank, core, launch, call site): one misused site is one root."""
    return groups(rows, trace["rank"][rows], trace["core"][rows], trace["launch"][rows], trace["site"][rows])


def group_heads(rows: np.ndarray, *ident: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``groups``' groups as each one's first row and its size, in the same order: for a rule that
    names only those, no array per group."""
    if not len(rows):
        return rows[:0], np.zeros(0, np.intp)
    _, first, _, counts = group_columns([np.asarray(c, np.int64) for c in ident])
    order = np.argsort(first, kind="stable")
    return rows[first[order]], counts[order]


def described(trace, rows: np.ndarray, names: tuple[str, ...]) -> dict[str, list]:
    """Per column name, ``trace.describe(r).get(name)`` for each of ``rows``, as one list: None where
    describe leaves the field out (null, or not a field of the row's kind), enums by their wire
    name, regions by name. One gather per column: describe costs tens of microseconds a row, and
    a rule may name thousands. Numeric columns only; names are column names (a JSON name differs
    only for pipe_sync's op)."""
    rows = np.asarray(rows, np.int64)
    codes = trace["kind"][rows].tolist()
    kind_of = {c: Kind(c) for c in set(codes)}
    kinds = [kind_of[c] for c in codes]
    out: dict[str, list] = {}
    for name in names:
        if name == "kind":
            out[name] = [k.wire for k in kinds]
            continue
        if trace.all_null(name):
            out[name] = [None] * len(rows)
            continue
        values = trace[name][rows].tolist()
        if name in ("rank", "core", "seq"):  # describe names these whatever they hold
            out[name] = values
            continue
        spec = COLUMN[name]
        shown, null = _shown(spec, trace.declared.regions), spec.numpy_null
        carried = {k: name in ("ts", "launch") + FIELDS[k][0] + FIELDS[k][1] + COMMON_OPTIONAL for k in set(kinds)}
        kept = [v if carried[k] and v != null else None for k, v in zip(kinds, values)]
        out[name] = kept if shown is None else [None if v is None else shown(v) for v in kept]
    return out


def _shown(spec, regions):
    """How describe shows a non-null value of column ``spec``: enums by wire name, regions by name
    (None: as it is)."""
    if spec.enum is not None:
        return lambda v: spec.enum(v).wire
    if spec.ref == "region":
        return lambda v: regions[v].name
    return None


def launch_gap(trace, ranks, launch: int) -> str | None:
    """Why ``launch`` is not whole on some of ``ranks`` (ring wrap, missing dump), else None.

    A rule that concludes from the absence of an event of those ranks in that
    launch holds back where this is not None: the event may be in the gap.
    """
    parts = []
    for r in sorted({int(x) for x in ranks}):
        if trace.launch_intact(r, launch):
            continue
        if r in trace.report.ranks_missing:
            parts.append(f"rank {r}'s dump is missing")
            continue
        lost = sorted((c, k) for (lr, c), k in trace.lost_by_core.items() if lr == r)
        parts.append(f"rank {r} lost " + ", ".join(f"{k} events on core {c}" for c, k in lost)
                     + f" to ring wrap (launch {launch} not whole)")
    return "; ".join(parts) or None


def core_gap(trace, rank: int, core: int, launch: int) -> str | None:
    """Why the start of ``launch`` on (rank, core) is not in the trace (ring wrap, cut start), else None.

    A per-core rule whose state opens earlier in the launch (an atomic window's
    ``atomic_mode add``) cannot tell, in such a launch, what state the core was in.
    """
    first = trace.intact_from.get((int(rank), int(core)))
    if first is None or first <= launch:
        return None
    lost = trace.lost_by_core.get((int(rank), int(core)), 0)
    return f"rank {rank} core {core} lost {lost} events before its first one here (launch {launch} not whole)"


def weakened(message: str, gap: str) -> dict:
    """Hit fields for a finding that leans on events in ``gap``. What that makes of it (a
    partial-trace note, never an error or warning root) is decided in one place, by the engine
    (``analyzer.causes``), for every rule alike."""
    return {"message": message, "gap": gap}


def region_name(trace, region: int) -> str:
    regs = trace.manifest.regions
    return regs[region].name if 0 <= region < len(regs) else f"region#{region}"


def ev(trace, row: int) -> str:
    """Short 'rank r core c seq s' of a row, for messages."""
    row = int(row)
    return f"rank {int(trace['rank'][row])} core {int(trace['core'][row])} seq {int(trace['seq'][row])}"


def row_keys(trace, rows: np.ndarray) -> np.ndarray:
    """Each row's (rank, core, seq), the key of a hit there, as a (rows, 3) array: a batch's ``key``."""
    return np.stack([trace[c][rows].astype(np.int64) for c in ("rank", "core", "seq")], axis=1)
