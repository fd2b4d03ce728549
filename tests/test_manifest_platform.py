"""The manifest's optional platform and per-peer transport map (issue 11)."""

from __future__ import annotations

import pytest

from ingest.contract import FORMAT, Engine
from ingest.errors import TraceError
from ingest.manifest import Manifest


def _doc(**kw):
    return {"format": FORMAT, "ranks": 2, "cores": 1, "regions": [{"name": "w", "role": "payload",
                                                                      "elem_bytes": 4, "length": 8}], **kw}


def test_platform_and_transport_round_trip():
    m = Manifest.from_json(_doc(platform="A2", transport=[[None, "roce"], ["udma", None]]))
    assert m.platform == "A2"
    assert m.transport_to(0, 1) == Engine.ROCE and m.transport_to(1, 0) == Engine.UDMA
    assert m.transport_to(0, 0) is None and m.transport_to(5, 0) is None
    again = Manifest.from_json(m.to_json())
    assert again.transport == m.transport and again.platform == "A2"


def test_absent_means_unknown():
    m = Manifest.from_json(_doc())
    assert m.platform is None and m.transport is None and m.transport_to(0, 1) is None
    assert "transport" not in m.to_json() and "platform" not in m.to_json()


@pytest.mark.parametrize("transport, where", [
    ([["mte", "mte"]], "$.transport"),
    ([["mte", "mte"], ["mte"]], "$.transport[1]"),
    ([["mte", "warp"], ["mte", "mte"]], "$.transport[0][1]"),
    ([["mte", "all"], ["mte", "mte"]], "$.transport[0][1]"),
    ("roce", "$.transport"),
])
def test_bad_transport_is_one_line_error(transport, where):
    with pytest.raises(TraceError) as e:
        Manifest.from_json(_doc(transport=transport), "m.json")
    assert where in str(e.value) and "\n" not in str(e.value)


def test_bad_platform_type():
    with pytest.raises(TraceError, match=r"\$\.platform"):
        Manifest.from_json(_doc(platform=910), "m.json")
