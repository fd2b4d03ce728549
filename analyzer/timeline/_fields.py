"""Each drawn event's fields by wire name, and the one-line label the timeline shows for it."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ingest.contract import COLUMN, COMMON_OPTIONAL, FIELDS, Kind, json_name

# A label per kind, from the event's wire-named fields; a missing field reads "?".
_LABEL = {
    Kind.WAIT_BEGIN: "wait {region}[{offset}] {cmp} {value}",
    Kind.WAIT_END: "wait_end {region}[{offset}] = {observed}",
    Kind.BARRIER_BEGIN: "barrier {scope}",
    Kind.PUT: "put -> r{peer} {region}[{offset}] {nbytes}B",
    Kind.GET: "get <- r{peer} {region}[{offset}] {nbytes}B",
    Kind.PUT_SIGNAL: "put_signal -> r{peer} {region}[{offset}], {sig_region}[{sig_offset}] {op} {value}",
    Kind.SIGNAL: "signal -> r{peer} {region}[{offset}] {op} {value}",
    Kind.AMO: "amo -> r{peer} {region}[{offset}] {op} {value}",
    Kind.QUIET: "quiet {engine}",
    Kind.FENCE: "fence {engine}",
    Kind.WRITE: "write {region}[{offset}] = {value}",
    Kind.PIPE_SYNC: "pipe_sync {op} {event}",
    Kind.ATOMIC_MODE: "atomic_mode {op}",
    Kind.ROUTE: "route token {token} top-k {topk} -> expert {expert}",
    Kind.COUNT: "count -> r{peer} expert {local_expert}: {value}",
    Kind.DELIVER: "deliver <- r{src_rank} expert {local_expert}: {delivered}/{requested}",
}

# Where an event's kind belongs, kept in the args (one category for all, so flows bind everywhere).
FAMILY = {
    Kind.KERNEL_BEGIN: "kernel", Kind.KERNEL_END: "kernel",
    Kind.WAIT_BEGIN: "wait", Kind.WAIT_END: "wait",
    Kind.BARRIER_BEGIN: "barrier", Kind.BARRIER_END: "barrier",
    Kind.PUT: "rma", Kind.GET: "rma", Kind.PUT_SIGNAL: "rma", Kind.SIGNAL: "signal", Kind.AMO: "atomic",
    Kind.QUIET: "completion", Kind.FENCE: "completion", Kind.WRITE: "local",
    Kind.PIPE_SYNC: "sync", Kind.ATOMIC_MODE: "atomic",
    Kind.ROUTE: "routing", Kind.COUNT: "routing", Kind.DELIVER: "routing",
}


def fields(trace, rows: np.ndarray) -> list[dict]:
    """The non-null fields of each row (kind-specific and site/epoch), wire names and values, in row order."""
    out: list[dict] = [{} for _ in range(len(rows))]
    kind = trace["kind"][rows]
    for k in np.unique(kind).tolist():
        kk = Kind(k)
        at = np.flatnonzero(kind == k)
        sub = rows[at]
        req, opt = FIELDS[kk]
        for name in req + opt + COMMON_OPTIONAL:
            spec = COLUMN[name]
            key = json_name(kk, name)
            vals = trace[name][sub]
            if spec.type.equals(COLUMN["name"].type):
                for i, v in zip(at.tolist(), vals.tolist()):
                    if v is not None:
                        out[i][key] = v
                continue
            present = vals != spec.numpy_null
            if spec.enum is not None:
                names = spec.enum.wires()
                decode = lambda v, names=names: names[v]  # noqa: E731
            elif spec.ref == "region":
                regions = [r.name for r in trace.manifest.regions]
                decode = lambda v, regions=regions: regions[v]  # noqa: E731
            else:
                decode = None
            for i, v, ok in zip(at.tolist(), vals.tolist(), present.tolist()):
                if ok:
                    out[i][key] = decode(v) if decode else v
    return out


def label(kind: Kind, f: dict) -> str:
    if kind in (Kind.KERNEL_BEGIN, Kind.KERNEL_END):
        return f.get("name", kind.wire) if kind == Kind.KERNEL_BEGIN else f"kernel_end {f.get('name', '')}".rstrip()
    if kind == Kind.BARRIER_END:
        return f"barrier_end {f.get('scope', '')}".rstrip()
    template = _LABEL.get(kind)
    if template is None:
        return kind.wire
    return template.format_map(defaultdict(lambda: "?", f))
