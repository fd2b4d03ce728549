"""Every SARIF document the suite writes is checked here: the SARIF 2.1.0 schema, then GitHub's upload rules.

GitHub code scanning's documented requirements ("SARIF support for code
scanning", "SARIF results exceed one or more limits"):

- version 2.1.0; at most 20 runs per file; tool.driver.name set;
- at most 25,000 results and 25,000 rules per run (5,000 results kept), at
  most 20 tags per rule;
- a result has message.text and at least one location, at most 1,000;
- a location needs a physicalLocation with artifactLocation.uri and
  region.startLine (>= 1);
- a uriBaseId names an entry of originalUriBaseIds, whose uri ends in '/';
- the upload is at most 10 MB gzipped.

moetrace also promises (docs/findings-json.md, analyzer/report/sarif.py):
related locations have physical locations too and count toward the 1,000,
every result has a class-level partialFingerprint and every rule a helpUri.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import jsonschema

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
_VALIDATOR = jsonschema.Draft4Validator(SCHEMA)

MAX_RUNS, MAX_RESULTS, MAX_RULES, MAX_TAGS, MAX_LOCATIONS = 20, 25_000, 25_000, 20, 1_000
MAX_GZIP = 10 * 2**20


def check_sarif(doc: dict | str) -> dict:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    doc = json.loads(text)
    _VALIDATOR.validate(doc)
    problems = list(github_problems(doc, len(gzip.compress(text.encode()))))
    assert not problems, "; ".join(problems[:10])
    return doc


def github_problems(doc: dict, gzipped: int):
    if doc.get("version") != "2.1.0":
        yield "version is not 2.1.0"
    if gzipped > MAX_GZIP:
        yield f"{gzipped} bytes gzipped, over 10 MB"
    runs = doc.get("runs", [])
    if not 1 <= len(runs) <= MAX_RUNS:
        yield f"{len(runs)} runs"
    for run in runs:
        driver = run.get("tool", {}).get("driver", {})
        if not driver.get("name"):
            yield "tool.driver.name missing"
        rules = driver.get("rules", [])
        if len(rules) > MAX_RULES:
            yield f"{len(rules)} rules"
        for rule in rules:
            if not rule.get("id"):
                yield "a rule without id"
            if len(rule.get("properties", {}).get("tags", [])) > MAX_TAGS:
                yield f"rule {rule['id']}: over {MAX_TAGS} tags"
            if not rule.get("helpUri", "").endswith(f"rules/{rule.get('id')}.md"):
                yield f"rule {rule.get('id')}: helpUri {rule.get('helpUri')!r}"
        bases = run.get("originalUriBaseIds", {})
        for name, base in bases.items():
            if not base.get("uri", "").endswith("/"):
                yield f"originalUriBaseIds {name}: uri must end in '/'"
        results = run.get("results", [])
        if len(results) > MAX_RESULTS:
            yield f"{len(results)} results"
        for i, res in enumerate(results):
            where = f"result {i} ({res.get('ruleId')})"
            if not res.get("ruleId"):
                yield f"{where}: no ruleId"
            if not res.get("message", {}).get("text"):
                yield f"{where}: no message.text"
            if not res.get("partialFingerprints"):
                yield f"{where}: no partialFingerprints"
            locs = res.get("locations", [])
            related = res.get("relatedLocations", [])
            if not locs:
                yield f"{where}: no location"
            if len(locs) + len(related) > MAX_LOCATIONS:
                yield f"{where}: {len(locs) + len(related)} locations"
            for loc in locs + related:
                yield from (f"{where}: {p}" for p in _location_problems(loc, bases))


def _location_problems(loc: dict, bases: dict):
    phys = loc.get("physicalLocation")
    if not phys:
        yield "a location without physicalLocation"
        return
    art = phys.get("artifactLocation", {})
    uri = art.get("uri")
    if not uri:
        yield "physicalLocation without artifactLocation.uri"
    elif uri.startswith("/") or ".." in uri.split("/"):
        yield f"uri {uri!r} is neither repository-relative nor a file: URI"
    base = art.get("uriBaseId")
    if base is not None and base not in bases:
        yield f"uriBaseId {base!r} not in originalUriBaseIds"
    line = phys.get("region", {}).get("startLine")
    if not isinstance(line, int) or line < 1:
        yield f"region.startLine {line!r}"
