"""``json.dumps(value, indent=2)``'s exact text, built as strings instead of through its generators.

With an indent, the standard library encodes in pure Python, one generator
step per token: for a report of 10^5 findings that was most of the report's
time.  This builds each container's text from its items' texts with one join
(strings through the C string encoder), in the order and form ``json.dumps``
uses: the same type tests in the same order, ``", "``-free separators
(``","`` and ``": "`` once an indent is set), ``[]`` / ``{}`` for empty
containers, keys converted as ``json`` converts them, ``NaN`` / ``Infinity``
as it writes them.  Anything else is ``json.dumps``'s own business: the caller
falls back to it (``TypeError``).
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any

_FLOAT_REPR = float.__repr__
_INT_REPR = int.__repr__


def dumps_indented(value: Any, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent)`` for values made of dicts, lists, tuples, str, int, float, bool, None."""
    step = " " * indent
    keys: dict[str, str] = {}  # str keys repeat (every finding has the same fields): encode each once
    leaf = _LEAF.get

    def encode(o: Any, nl: str) -> str:
        f = leaf(type(o))
        if f is not None:
            return f(o)
        text = _scalar(o)  # a subclass of a scalar type (an enum): json's isinstance tests
        if text is not None:
            return text
        inner = nl + step
        if isinstance(o, (list, tuple)):
            if not o:
                return "[]"
            parts = []
            for x in o:
                f = leaf(type(x))
                parts.append(f(x) if f is not None else encode(x, inner))
            return "[" + inner + ("," + inner).join(parts) + nl + "]"
        if isinstance(o, dict):
            if not o:
                return "{}"
            parts = []
            for k, v in o.items():
                if type(k) is str:
                    ek = keys.get(k)
                    if ek is None:
                        ek = keys[k] = encode_basestring_ascii(k) + ": "
                else:
                    ek = _key(k) + ": "
                f = leaf(type(v))
                parts.append(ek + (f(v) if f is not None else encode(v, inner)))
            return "{" + inner + ("," + inner).join(parts) + nl + "}"
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    return encode(value, "\n")


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == float("inf"):
        return "Infinity"
    if o == -float("inf"):
        return "-Infinity"
    return _FLOAT_REPR(o)


def _scalar(o: Any) -> str | None:
    """The text of a scalar, None for a container (json's order of tests: str, None, bools, int, float)."""
    if isinstance(o, str):
        return encode_basestring_ascii(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return _INT_REPR(o)
    if isinstance(o, float):
        return _float(o)
    return None


_LEAF = {str: encode_basestring_ascii, int: _INT_REPR, float: _float, bool: lambda o: "true" if o else "false",
         type(None): lambda o: "null"}  # exact types only; subclasses take _scalar's tests


def _key(k: Any) -> str:
    # json turns a scalar key into the string of its scalar text (1.5 -> "1.5", True -> "true").
    text = k if isinstance(k, str) else _scalar(k)
    if text is not None:
        return encode_basestring_ascii(text)
    raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")
