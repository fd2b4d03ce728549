"""(a) of the root decision (``analyzer.causes``): the causes each draft cites, resolved to drafts.

A hit names its causes as (code, key) pairs (``rules.base.Hit.caused_by``);
here they become edges of the cause graph, in CSR form, each distinct
``caused_by`` resolved once (a million symptoms share a few), and the pairs
that name no draft of the report are kept as text for the finding's extra.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .draft_table import Drafts
from .finding import jsonable, normalize_key


class Keys:
    """Each draft's key, normalized, built where asked: only the hits a cause may name and the ties
    of the report's order need theirs (a column hit's key is built from its batch's array)."""

    def __init__(self, drafts: Drafts):
        self.drafts = drafts
        self.built: dict[int, Any] = {}

    def __getitem__(self, i: int) -> Any:
        found = self.built.get(i, _NONE)
        if found is _NONE:
            found = self.built[i] = normalize_key(self.drafts.key(i))
        return found


_NONE = object()


def cited(drafts: Drafts, keys: Keys) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
    """(a): each draft's reported causes (indices, in citation order, each once) as a CSR graph;
    and the causes it names that no draft of this report is, as 'CODE [key]' (an index into the
    returned texts, -1 none). Resolved once per distinct ``caused_by``: a million symptoms share
    a few; only the drafts of a code some draft cites are indexed."""
    n = len(drafts)
    lengths = np.zeros(n, np.int64)
    missing = np.full(n, -1, np.int64)
    texts: list[tuple[str, ...]] = []
    citing = np.flatnonzero(drafts.cited >= 0)
    if not len(citing):
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), missing, ()
    named_codes = {code for caused_by in drafts.citations for code, _ in caused_by}
    index: dict[tuple[str, Any], list[int]] = {}
    cited_ids = [k for k, code in enumerate(drafts.codes) if code in named_codes]
    for i in np.flatnonzero(np.isin(drafts.code, cited_ids)).tolist():
        index.setdefault((drafts.codes[drafts.code[i]], keys[i]), []).append(i)
    citing = citing[np.argsort(drafts.cited[citing], kind="stable")]
    bounds = np.flatnonzero(np.diff(drafts.cited[citing])) + 1
    placed: list[tuple[np.ndarray, np.ndarray]] = []  # (drafts, the causes each of them has)
    for members in np.split(citing, bounds):
        caused_by = drafts.citations[drafts.cited[members[0]]]
        found, names, among = _resolved(caused_by, index)
        own = np.isin(members, np.fromiter(among, np.int64, len(among))) if among else np.zeros(len(members), bool)
        shared = members[~own]
        lengths[shared] = len(found)
        placed.append((shared, np.asarray(found, np.int64)))
        if names:
            missing[shared] = len(texts)
            texts.append(tuple(names))
        for i in members[own].tolist():  # a hit that names itself is never its own cause
            found_i, names_i, _ = _resolved(caused_by, index, i)
            lengths[i] = len(found_i)
            placed.append((np.array([i], np.int64), np.asarray(found_i, np.int64)))
            if names_i:
                missing[i] = len(texts)
                texts.append(tuple(names_i))
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=starts[1:])
    targets = np.empty(starts[-1], np.int64)
    for members, found in placed:
        if len(found) and len(members):
            targets[starts[members][:, None] + np.arange(len(found))] = found
    return starts, targets, missing, tuple(texts)


def _resolved(caused_by, index: dict, own: int = -1) -> tuple[list[int], list[str], set[int]]:
    """The drafts ``caused_by`` names, in citation order, each once, draft ``own`` never; the pairs that
    name no other draft; and the drafts named, as a set."""
    found: list[int] = []
    seen: set[int] = set()  # found as a set: a finding can cite thousands of causes
    missing: list[str] = []
    for code, key in caused_by:
        key = normalize_key(key)
        js = [j for j in index.get((code, key), ()) if j != own]
        if not js:
            missing.append(f"{code} {json.dumps(jsonable(key))}")
        for j in js:
            if j not in seen:
                seen.add(j)
                found.append(j)
    return found, missing, seen
