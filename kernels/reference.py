"""Plain numpy references: what each kernel computes, with no protocol at all."""

from __future__ import annotations

import numpy as np

from .base import expert_fn, valid_ids


def moe_combine(x: np.ndarray, ids: np.ndarray, scales: np.ndarray, local_experts: int,
                capacity_keep: np.ndarray | None = None) -> np.ndarray:
    """out[r, t] = sum over valid k of scales[r,t,k] * expert(x[r,t], ids[r,t,k]).

    Invalid ids (outside [0, num_experts)) contribute nothing, as in combine_classic's
    guarded accumulation. (P, B, H) int64.
    """
    P, B, K = ids.shape
    ne = P * local_experts
    ok = valid_ids(ids, ne)
    if capacity_keep is not None:
        ok &= capacity_keep
    out = np.zeros((P, B, x.shape[2]), dtype=np.int64)
    for k in range(K):
        e = np.where(ok[:, :, k], ids[:, :, k], 0)
        y = expert_fn(x.reshape(P * B, -1), e.reshape(-1)).reshape(P, B, -1)
        out += y * (scales[:, :, k] * ok[:, :, k])[:, :, None]
    return out


def reduce_scatter(contrib: np.ndarray) -> np.ndarray:
    """contrib[s, t] is rank s's block for target t; out[t] = sum over s of contrib[s, t]."""
    return contrib.astype(np.int64).sum(axis=0)


def capacity_keep(ids: np.ndarray, num_experts: int, capacity: int) -> np.ndarray:
    """Which (rank, token, topk) pairs a receive buffer of ``capacity`` rows per expert keeps.

    Rows of one expert are laid out by source rank, then by the source's (token, topk)
    order; everything at or past ``capacity`` is dropped (the silent clamp of
    dispatch_gmm_combine). Invalid ids are kept here: ``moe_combine`` drops them itself.
    """
    P, B, K = ids.shape
    flat = ids.reshape(-1)
    ok = np.flatnonzero(valid_ids(flat, num_experts))
    pos = np.empty(len(ok), dtype=np.int64)
    for e in np.unique(flat[ok]):  # rank-major flat order is source rank, then (token, topk)
        sel = flat[ok] == e
        pos[sel] = np.arange(sel.sum())
    keep = np.ones(flat.shape, dtype=bool)
    keep[ok[pos >= capacity]] = False
    return keep.reshape(P, B, K)
