"""The JSON report's fast indented text is json.dumps(indent=2)'s, byte for byte."""

import enum
import json
import random

import pytest

from analyzer.report._json_text import dumps_indented


class _Level(enum.IntEnum):
    HIGH = 3


class _Name(str, enum.Enum):
    ACUTE = "x\u00e9"


_SCALARS = [None, True, False, 0, -7, 2**70, 1.5, 3.0, 1e-300, float("nan"), float("inf"), -float("inf"),
            "", 'a"b\\\n\u00e9\U0001f600', _Level.HIGH, _Name.ACUTE]
_KEYS = ["k", "\u00e9", 1, 2.5, True, False, None, _Level.HIGH]


def _value(rng: random.Random, depth: int):
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice(_SCALARS)
    if r < 0.55:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if r < 0.7:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_same_text_as_json_dumps():
    rng = random.Random(7)
    for _ in range(2000):
        v = _value(rng, 0)
        assert dumps_indented(v) == json.dumps(v, indent=2)
    assert dumps_indented({"a": [], "b": {}, "c": [{}]}, indent=4) == json.dumps({"a": [], "b": {}, "c": [{}]}, indent=4)


@pytest.mark.parametrize("bad", [{"a": {1, 2}}, [object()], {(1, 2): 3}])
def test_what_json_rejects_is_rejected(bad):
    with pytest.raises(TypeError):
        json.dumps(bad, indent=2)
    with pytest.raises(TypeError):
        dumps_indented(bad)
