"""The corpus' cases: each a function returning (trace, expect[, options]), registered by name."""

from __future__ import annotations

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def roots(items, note: str) -> dict:
    """expect.json for a faulty trace: (code or codes, rank, core or None) per expected root cause.

    Several codes mean any one of them names this root (the brief leaves the choice to the rules:
    e.g. MT202 or MT201 for a flag its consumer did not reset); a null rank or core matches any.
    A fourth item "optional" marks roots that may be reported but need not be (the same defect
    seen at another place, e.g. an == compare every rank's code has).
    """
    out = []
    for code, rank, core, *flag in items:
        item = {"code": list(code) if isinstance(code, tuple) else code, "rank": rank, "core": core}
        if flag:
            item["optional"] = True
        out.append(item)
    return {"roots": out, "clean": False, "note": note}


def clean(note: str) -> dict:
    return {"roots": [], "clean": True, "note": note}
