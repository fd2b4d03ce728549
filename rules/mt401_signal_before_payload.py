"""MT401: a flag written to a peer while a payload put to it is still in flight."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import HappensBefore, Options, Stage
from .analysis import codes as C
from .analysis.groups import distinct_per_group
from .base import Family, Rule, Severity, hits_of
from .hit_columns import HitColumns, coded

_SHOW = 8  # (flag, put) pairs named in a group's extra


class SignalBeforePayload(Rule):
    """A flag write to a peer that can overtake a payload put still in flight.

    What it does
        Per core, in program order, tracks the payload puts (puts into a
        region whose role is not flag or counter) not yet covered by a quiet
        or fence of their engine (`all` covers every engine; a quiet or fence
        naming a peer covers only that peer). A signal, an amo, or a put into
        a flag or counter region to a peer with such a put outstanding is a
        hit naming both. A quiet of another engine in between is named too.
        Fused put_signal is exempt. An amo on an engine listed in the
        `ordered_engines` option (default roce and ibgda: an RDMA atomic completes after
        the writes before it on its queue pair) is exempt after puts of that
        engine. One missing drain is one hit: the flag writes that overtake
        puts of one (rank, core, launch, put site) are grouped under the
        first (one quiet after that put fixes them all), with their count,
        their sites and the first (flag seq, put seq) pairs in `extra`.

    Why it matters
        The consumer waits on the flag and then reads the payload. A flag that
        lands first lets it read rows that are not there yet: silent data
        corruption, or a hang when the payload carries the next flag.
        `aclshmem_quiet` drains the MTE pipes only; SDMA, UDMA and RoCE each
        need their own quiet.

    Example
        put sdma peer=1 payload[0:4096]; quiet mte; signal peer=1 ready[3]=1
        -- the MTE quiet does not complete the SDMA put: use the SDMA quiet.

    Evidence
        The group's first flag write (first), its outstanding payload put, the
        quiet of the wrong engine if there was one, and the group's last flag
        write when there are several.
    """

    code = "MT401"
    name = "signal-before-payload"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "Flag written to a peer while a payload put to it is still outstanding"
    requires = (Stage.HAPPENS_BEFORE,)
    # An amo that overtakes a UDMA/RoCE put to its PE is first of all in flight together with it
    # (MT603): that is the root, which a quiet between them fixes as well.
    cites = ("MT603",)
    options = {"ordered_engines": list(Options().ordered_engines)}
    shared_options = ("ordered_engines",)  # the unfenced analysis MT202 reads too

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        u = ctx.stage(HappensBefore).unfenced(ctx.option("ordered_engines", self.options["ordered_engines"]))
        if not len(u.flags):
            return
        members = np.argsort(u.group, kind="stable")  # flag indices grouped, row order within
        bounds = np.searchsorted(u.group[members], np.arange(len(u.first) + 1))
        # A group can hold many flag writes (a loop of signals): what a hit names of them is worked
        # out for all groups at once, and what it names of one row is read a column at a time (not
        # trace.describe, nor a numpy scalar, per hit). Per group: its first flag write, that one's
        # outstanding put and the quiet of another engine (row 0 stands in where there is none:
        # never read), its last flag write, its sites, its peers and its first (flag, put) seq pairs.
        flags, count = u.flags[members], len(u.first)
        heads, lasts = flags[bounds[:-1]], flags[bounds[1:] - 1]
        put, quiet = u.put[members[bounds[:-1]]], u.quiet[members[bounds[:-1]]]
        seq = trace["seq"]
        d = H.described(trace, heads, ("rank", "core", "launch", "kind", "peer", "region", "offset"))
        dp = H.described(trace, put, ("engine", "region", "offset", "nbytes", "seq"))
        dq = H.described(trace, np.maximum(quiet, 0), ("kind", "engine", "peer", "seq"))
        site = trace["site"][flags]
        has_site = np.flatnonzero(site != C.NULL32)  # positions in the grouped flags: a group's run them
        sites = _distinct_per_group(site, has_site, np.searchsorted(has_site, bounds))
        peers = _distinct_per_group(trace["peer"][flags], np.arange(len(flags)), bounds)
        sizes = np.diff(bounds)
        shown = np.arange(len(flags)) - np.repeat(bounds[:-1], sizes) < _SHOW
        pair_edges = np.concatenate(([0], np.cumsum(np.minimum(sizes, _SHOW)))).tolist()
        pair_seqs = list(zip(seq[flags[shown]].tolist(), seq[u.put[members[shown]]].tolist()))
        mt603 = hits_of(trace, "MT603")
        naming = _naming(mt603)
        causes = [tuple(("MT603", mt603[k].key) for k in sorted({*naming.get(f, ()), *naming.get(p, ())}))
                  for f, p in zip(heads.tolist(), put.tolist())] if naming else [()] * count
        pairs = [tuple(pair_seqs[pair_edges[g]:pair_edges[g + 1]]) for g in range(count)]
        columns: dict[str, np.ndarray] = {}
        tables: dict[str, tuple] = {}
        nulls: dict[str, int] = {}
        # The first flag write's rank, core and seq (every event has them): its key, plain columns.
        for name in ("rank", "core", "seq"):
            columns[name] = trace[name][heads].astype(np.int64)
        for name, values in (("launch", d["launch"]), ("kind", d["kind"]),
                             ("peer", d["peer"]), ("region", d["region"]), ("offset", d["offset"]),
                             ("put_engine", dp["engine"]), ("put_region", dp["region"]),
                             ("put_offset", dp["offset"]), ("put_bytes", dp["nbytes"]), ("put_seq", dp["seq"]),
                             ("quiet_kind", dq["kind"]), ("quiet_engine", dq["engine"]), ("quiet_peer", dq["peer"]),
                             ("quiet_seq", dq["seq"]), ("sites", sites), ("peers", peers),
                             ("pairs", pairs), ("caused_by", causes),
                             ("rests_on", zip(d["rank"], d["core"]))):
            columns[name], tables[name] = coded(values)
        tables["rests_on"] = tuple((place,) for place in tables["rests_on"])
        for name in ("quiet_kind", "quiet_engine", "quiet_peer", "quiet_seq"):  # no quiet in between: none
            columns[name] = np.where(quiet >= 0, columns[name], -1)
            nulls[name] = -1
        columns["flag_writes"], columns["last_seq"] = sizes.astype(np.int64), seq[lasts].astype(np.int64)
        rows = np.stack((heads, put, quiet, np.where(sizes > 1, lasts, -1)), axis=1).astype(np.int64)
        yield HitColumns(code=self.code, fields=Overtake, render=_message, extra=_extra, columns=columns,
                         tables=tables, nulls=nulls, roles=ROLES, rows=rows,
                         key=np.stack([columns[name] for name in ("rank", "core", "seq")], axis=1))


ROLES = ("flag write", "outstanding put", "quiet of another engine", "last flag write of the group")


class Overtake(NamedTuple):
    """A group of flag writes that overtake a payload put: its message and extra are rendered from these."""

    rank: int
    core: int
    launch: int
    kind: str  # the first flag write's kind (signal, amo, put)
    peer: int | None
    region: str | None
    offset: int | None
    seq: int
    put_engine: str | None
    put_region: str | None
    put_offset: int | None
    put_bytes: int | None
    put_seq: int
    quiet_kind: str | None  # the quiet (or fence) of another engine in between; None: there was none
    quiet_engine: str | None
    quiet_peer: int | None
    quiet_seq: int | None
    sites: tuple  # the group's flag write sites
    peers: tuple  # the ranks its flag writes go to
    pairs: tuple  # its first (flag seq, put seq) pairs
    flag_writes: int
    last_seq: int


def _message(f: Overtake) -> str:
    why = f"no quiet or fence of engine {f.put_engine} in between"
    if f.quiet_seq is not None:
        named = f"{f.quiet_kind} {'all' if f.quiet_engine is None else f.quiet_engine}" + (
            f" peer {f.quiet_peer}" if f.quiet_peer is not None else "")
        why = f"the {named} at seq {f.quiet_seq} does not cover it"
    more = ""
    if f.flag_writes > 1:
        more = (f"; {f.flag_writes} flag writes from {len(f.sites)} site(s) overtake puts of this site after "
                f"the same missing drain (to rank(s) {', '.join(map(str, f.peers))}, seq {f.seq}..{f.last_seq})")
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} to rank {f.peer} {f.region}[{f.offset}] at "
            f"seq {f.seq} while the {f.put_engine} put {f.put_region}[{f.put_offset}] ({f.put_bytes} B) at seq "
            f"{f.put_seq} is outstanding; {why}{more}")


def _extra(f: Overtake) -> dict:
    return {"peer": f.peer, "put_engine": f.put_engine, "flag_writes": f.flag_writes, "flag_sites": list(f.sites),
            "pairs": [list(x) for x in f.pairs]}


def _distinct_per_group(values: np.ndarray, members: np.ndarray, bounds: np.ndarray) -> list[tuple]:
    """Per group g, the distinct ``values[members[bounds[g]:bounds[g + 1]]]`` in ascending order."""
    distinct, edges = distinct_per_group(values, members, bounds)
    distinct, edges = distinct.tolist(), edges.tolist()
    return [tuple(distinct[edges[g]:edges[g + 1]]) for g in range(len(edges) - 1)]


def _naming(hits) -> dict:
    """Row -> the indices of the ``hits`` that name it: the hits a flag write cites, found without
    a scan of them all per flag write."""
    out: dict = {}
    for k, h in enumerate(hits):
        for _, row in h.rows:
            out.setdefault(row, []).append(k)
    return out
