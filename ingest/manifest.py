"""The trace manifest: what the machine and the kernel looked like.

Parsed once into frozen dataclasses; every error names the file and the JSON
path of the offending value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .contract import FORMAT, Engine, Kind, Role
from .value_ranges import ADDRESS_LIMIT, HEAP_LIMIT, column_range, value_range_of
from .errors import TraceError


# Bytes per element a region may have (the views hold elem_bytes as a 32-bit integer).
ELEM_BYTES_LIMIT = 1 << 16

# How a region's slot number (offset // slot_words) ties to the routes, so the
# analyzer can name the producer a stuck wait expects without knowing the
# kernel. P ranks, E_l local experts, B tokens per rank, K top-k.
SLOT_INDEX = {
    "token_topk": "slot = token*K + topk on the token owner; written by the rank owning the route's expert",
    "segment": "slot = local_expert*P + src_rank on the expert rank; written by src_rank",
    "dispatch": "slot = (src_rank*E_l + local_expert)*(B*K) + i on the expert rank; written by src_rank",
    "rank": "slot = the writer's rank (one slot per peer); written by that rank",
}


# The platforms a rule knows the engine limits of (``platform`` may also be free text: then
# the limits that depend on it are not checked).
PLATFORMS = {
    "A2": "Atlas A2 (Ascend 910B): MTE atomics on int8/int16/int32/half/bfloat16/float only",
    "A3": "Atlas A3 (Ascend 910C): as A2",
    "Ascend950": "Ascend 950: MTE atomics also on uint32/int64/uint64; UDMA and RoCE scalar atomics",
}

# Engines a manifest's transport map may name: the ones that reach a peer (the unified API's
# topo_list); local work and "all" are no transport.
TRANSPORTS = tuple(e for e in Engine if e not in (Engine.LOCAL, Engine.ALL))


# A region's optional annotations: each sharpens the diagnosis; none is needed for it.
ANNOTATIONS = ("reset", "monotonic", "slot_words", "index")


@dataclass(frozen=True)
class Region:
    """A symmetric window, present at the same offsets on every rank."""

    id: int
    name: str
    role: Role
    elem_bytes: int
    length: int  # elements
    reset: int | None = None  # value a flag must return to between rounds
    monotonic: bool = False  # a generation counter: only ever grows
    slot_words: int = 1  # elements per logical slot (8 for the classic 32 B ready/count/status slots)
    index: str | None = None  # how slot numbers map to routes: see SLOT_INDEX
    base: int = 0  # first element key of this region inside one rank's key space
    # The optional annotations the manifest states (even at their default): the analyzer
    # infers the others from the trace (rules.infer), and must not override these.
    annotated: frozenset = frozenset()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "role": self.role.wire,
                               "elem_bytes": self.elem_bytes, "length": self.length}
        if self.reset is not None or "reset" in self.annotated:
            out["reset"] = self.reset
        if self.monotonic or "monotonic" in self.annotated:
            out["monotonic"] = self.monotonic
        if self.slot_words != 1 or "slot_words" in self.annotated:
            out["slot_words"] = self.slot_words
        if self.index is not None or "index" in self.annotated:
            out["index"] = self.index
        return out


@dataclass(frozen=True)
class Manifest:
    ranks: int
    cores: int
    protocol: str
    regions: tuple[Region, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    clock_hz: float | None = None
    sites: Mapping[int, str] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # kernel names by id, for binary dumps
    format: str = FORMAT
    platform: str | None = None  # "A2", "A3", "Ascend950" (PLATFORMS) or free text
    # transport[r][p]: the engine rank r reaches peer p over (topo_list), None where not stated.
    transport: tuple[tuple[Engine | None, ...], ...] | None = None

    def transport_to(self, rank: int, peer: int) -> Engine | None:
        """The engine ``rank`` reaches ``peer`` over, where the manifest's transport map says."""
        t = self.transport
        if t is None or not (0 <= rank < len(t)) or not (0 <= peer < len(t[rank])):
            return None
        return t[rank][peer]

    # ---- derived ---------------------------------------------------------
    @property
    def words_per_rank(self) -> int:
        """Element keys one rank's symmetric heap spans (sum of region lengths)."""
        return sum(r.length for r in self.regions)

    def region(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def region_id(self, name: str) -> int | None:
        for r in self.regions:
            if r.name == name:
                return r.id
        return None

    def param(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)

    @property
    def num_experts(self) -> int | None:
        ne = self.params.get("num_experts")
        if ne is None and "local_experts" in self.params:
            ne = self.params["local_experts"] * self.ranks
        return ne

    def value_range(self, kind: Kind, column: str) -> tuple[int, int]:
        """The values an integer field of ``kind`` may take on this machine (``value_ranges.value_range_of``)."""
        return value_range_of(self.ranks, self.cores, kind, column)

    def site_text(self, site: int | None) -> str | None:
        return None if site is None else self.sites.get(int(site))

    # ---- (de)serialisation ----------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": self.format,
            "ranks": self.ranks,
            "cores": self.cores,
            "protocol": self.protocol,
            "params": dict(self.params),
            "regions": [r.to_json() for r in self.regions],
        }
        if self.clock_hz is not None:
            out["clock_hz"] = self.clock_hz
        if self.sites:
            out["sites"] = {str(k): v for k, v in sorted(self.sites.items())}
        if self.names:
            out["names"] = list(self.names)
        if self.platform is not None:
            out["platform"] = self.platform
        if self.transport is not None:
            out["transport"] = [[e.wire if e is not None else None for e in row] for row in self.transport]
        return out

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "Manifest":
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise TraceError(path, "", f"cannot read manifest: {e.strerror or e}") from None
        return cls.from_bytes(data, path)

    @classmethod
    def from_bytes(cls, data: bytes, path: str | Path | None = None) -> "Manifest":
        """A manifest file's bytes (read from wherever it lives); ``path`` names it in errors."""
        try:
            text = data.decode("utf-8-sig")  # a BOM opening the file is accepted, as in event files
        except UnicodeDecodeError as e:
            raise TraceError(path, f"byte {e.start}", f"manifest is not valid UTF-8 text: {e.reason}") from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise TraceError(path, f"line {e.lineno}", f"manifest is not valid JSON: {e.msg}") from None
        except RecursionError:
            raise TraceError(path, "", "manifest is not a manifest: JSON nested too deeply") from None
        return cls.from_json(doc, path)

    @classmethod
    def from_json(cls, doc: Any, path: str | Path | None = None) -> "Manifest":
        def err(where: str, msg: str) -> TraceError:
            return TraceError(path, where, msg)

        def need(obj: Mapping, key: str, types, where: str, optional: bool = False):
            if key not in obj or obj[key] is None:
                if optional:
                    return None
                raise err(where + key, f"manifest field {key!r} is missing")
            val = obj[key]
            if isinstance(val, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
                raise err(where + key, f"manifest field {key!r} must be {_tname(types)}, got {val!r}")
            if not isinstance(val, types):
                raise err(where + key, f"manifest field {key!r} must be {_tname(types)}, got {val!r}")
            return val

        if not isinstance(doc, dict):
            raise err("", "manifest must be a JSON object")
        fmt = need(doc, "format", str, "$.")
        if fmt != FORMAT:
            raise err("$.format", f"unsupported format {fmt!r}; expected {FORMAT!r}")
        ranks = need(doc, "ranks", int, "$.")
        cores = need(doc, "cores", int, "$.")
        if ranks <= 0 or ranks > 32767:
            raise err("$.ranks", f"ranks must be in 1..32767, got {ranks}")
        if cores <= 0 or cores > 32767:
            raise err("$.cores", f"cores must be in 1..32767, got {cores}")
        protocol = need(doc, "protocol", str, "$.", optional=True) or ""
        clock = need(doc, "clock_hz", (int, float), "$.", optional=True)
        params = need(doc, "params", dict, "$.", optional=True) or {}
        raw_regions = need(doc, "regions", list, "$.")
        regions: list[Region] = []
        base = 0
        seen: set[str] = set()
        for i, r in enumerate(raw_regions):
            w = f"$.regions[{i}]."
            if not isinstance(r, dict):
                raise err(w[:-1], "region must be an object")
            name = need(r, "name", str, w)
            if name in seen:
                raise err(w + "name", f"duplicate region name {name!r}")
            seen.add(name)
            role_text = need(r, "role", str, w)
            try:
                role = Role.from_wire(role_text)
            except ValueError as e:
                raise err(w + "role", str(e)) from None
            elem_bytes = need(r, "elem_bytes", int, w)
            length = need(r, "length", int, w)
            if elem_bytes <= 0 or length < 0:
                raise err(w[:-1], "elem_bytes must be > 0 and length >= 0")
            if elem_bytes > ELEM_BYTES_LIMIT:
                raise err(w + "elem_bytes", f"elem_bytes {elem_bytes} is beyond {ELEM_BYTES_LIMIT}")
            if length > ADDRESS_LIMIT:
                raise err(w + "length", f"length {length} is beyond what the analyses address "
                                        f"({ADDRESS_LIMIT} elements, 2^40)")
            reset = need(r, "reset", int, w, optional=True)
            if reset is not None and not _data_int(reset):
                raise err(w + "reset", f"reset {reset} is not an int64 value (the int64 minimum stands for null)")
            mono = need(r, "monotonic", bool, w, optional=True) or False
            slot_words = need(r, "slot_words", int, w, optional=True) or 1
            if slot_words <= 0 or slot_words > ADDRESS_LIMIT:
                raise err(w + "slot_words", f"slot_words must be in 1..{ADDRESS_LIMIT}, got {slot_words}")
            index = need(r, "index", str, w, optional=True)
            if index is not None and index not in SLOT_INDEX:
                raise err(w + "index", f"unknown index {index!r}; expected one of {', '.join(SLOT_INDEX)}")
            stated = frozenset(k for k in ANNOTATIONS if k in r)  # "reset": null states there is none
            regions.append(Region(i, name, role, elem_bytes, length, reset, mono, slot_words, index, base, stated))
            base += length
            if base > HEAP_LIMIT:
                raise err(w + "length", f"the regions up to this one span {base} elements per rank; the analyses "
                                        f"address at most {HEAP_LIMIT} (2^44)")
        if len(regions) > 32767:
            raise err("$.regions", "too many regions")
        raw_sites = need(doc, "sites", dict, "$.", optional=True) or {}
        sites: dict[int, str] = {}
        site_lo, site_hi = column_range("site")
        for k, v in raw_sites.items():
            try:
                site = int(k)
            except ValueError:
                raise err(f"$.sites.{k}", "site ids must be integers") from None
            if not site_lo <= site <= site_hi:
                raise err(f"$.sites.{k}", f"site id {site} does not fit the site column ({site_lo}..{site_hi})")
            sites[site] = str(v)
        names = tuple(need(doc, "names", list, "$.", optional=True) or ())
        for i, n in enumerate(names):
            if not isinstance(n, str):
                raise err(f"$.names[{i}]", f"a kernel name must be a string, got {n!r}")
        platform = need(doc, "platform", str, "$.", optional=True)
        transport = _transport(doc.get("transport"), ranks, err)
        _check_values(doc, "$", err)
        return cls(ranks=ranks, cores=cores, protocol=protocol, regions=tuple(regions),
                   params=params, clock_hz=clock, sites=sites, names=names, format=fmt,
                   platform=platform, transport=transport)


def _transport(raw, ranks: int, err):
    """The optional per-peer transport map: one list per rank of one engine name (or null) per peer."""
    if raw is None:
        return None
    names = ", ".join(e.wire for e in TRANSPORTS)
    if not isinstance(raw, list) or len(raw) != ranks:
        raise err("$.transport", f"transport must be a list of {ranks} lists (one per rank) of engine names")
    rows = []
    for r, row in enumerate(raw):
        if not isinstance(row, list) or len(row) != ranks:
            raise err(f"$.transport[{r}]", f"transport[{r}] must list one engine (or null) for each of the "
                                           f"{ranks} peers")
        out = []
        for p, name in enumerate(row):
            if name is None:
                out.append(None)
                continue
            if not isinstance(name, str) or name.lower() not in {e.wire for e in TRANSPORTS}:
                raise err(f"$.transport[{r}][{p}]", f"unknown transport {name!r}; expected one of {names} or null")
            out.append(Engine.from_wire(name))
        rows.append(tuple(out))
    return tuple(rows)


def _data_int(v: int) -> bool:
    """An integer the int64 columns and views can hold as data (not the null sentinel)."""
    return -(2**63) < v < 2**63


def _check_values(doc, where: str, err) -> None:
    """Every integer of the manifest fits int64 (params such as capacity or topk meet the events'
    int64 columns in the views), every string is valid Unicode (no lone surrogate escape)."""
    stack = [(doc, where)]
    while stack:
        v, w = stack.pop()
        if isinstance(v, bool) or v is None or isinstance(v, float):
            continue
        if isinstance(v, int):
            if not _data_int(v):
                raise err(w, f"integer {v} does not fit int64 without its minimum (the null sentinel)")
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise err(w, f"not valid Unicode text (a lone surrogate escape): {v!r}") from None
        elif isinstance(v, dict):
            for k, x in v.items():
                stack.append((k, w))
                stack.append((x, f"{w}.{k}"))
        elif isinstance(v, list):
            stack.extend((x, f"{w}[{i}]") for i, x in enumerate(v))


def _tname(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    names = {int: "an integer", float: "a number", str: "a string", dict: "an object",
             list: "a list", bool: "true or false"}
    return " or ".join(names.get(t, t.__name__) for t in types)
