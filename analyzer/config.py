"""Configuration: ``[tool.moetrace]`` in pyproject.toml, or a moetrace.toml.

Keys (the same in both files; moetrace.toml has them at top level)::

    select   = ["MT1", "stale-flag"]   # codes, code prefixes, family names or "ALL"; default all
    ignore   = ["MT402"]
    fail-on  = "error"                 # error | warning | note | never
    window-events = 5000000            # traces larger than this are diagnosed a window at a time
    jobs = 1                           # windows diagnosed at once, each in its own process
    max-findings = 200                 # findings listed per defect class (every format); counts stay exact
    [severity]                         # selector -> level; the most specific selector wins
    MT402 = "warning"
    [options.MT401]                    # per-rule options, checked against Rule.options
    ordered_engines = ["roce", "ibgda"]  # engines whose amo may follow puts without a quiet

Selection follows ruff: for each rule the most specific matching selector of
``select`` and ``ignore`` decides (an exact code beats a prefix, a longer
prefix a shorter one, a prefix or family beats "ALL"); on a tie ignore wins.
A config error is one line naming the file and the key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from rules.base import Family  # cheap: no numpy, no rule modules

from .finding import SEVERITIES
from .windows import WINDOW_EVENTS

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Rule

LEVELS = SEVERITIES  # a level a selector may set, most severe first
FAIL_ON = LEVELS + ("never",)
FAMILIES = tuple(f.value for f in Family)
CONFIG_FILES = ("moetrace.toml", "pyproject.toml")  # first found in a directory wins
_KEYS = ("select", "ignore", "severity", "options", "fail-on", "window-events", "jobs", "max-findings")
# Findings a report lists per defect class (and classes the text report lists): a million stuck
# waits are a few classes, and a report of a few hundred findings says all there is to say of them.
MAX_FINDINGS = 200
_CODE_PREFIX = re.compile(r"^MT[0-9]{0,3}$")


class ConfigError(Exception):
    """A bad configuration value: the CLI prints it as one line and exits 2."""

    def __init__(self, path: str | Path | None, key: str, message: str):
        self.path = None if path is None else str(path)
        self.key = key
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        place = self.path or "<config>"
        return f"{place}: {self.key}: {self.message}" if self.key else f"{place}: {self.message}"


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()  # empty: every rule
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    fail_on: str = "error"
    window_events: int = WINDOW_EVENTS  # a larger trace is diagnosed a window of launches at a time
    jobs: int = 1  # windows at once, a process each: memory grows with it
    path: Path | None = None  # the file it came from, for error messages
    cli: tuple[str, ...] = ()  # selectors given on the command line, so errors name the right place
    max_findings: int = MAX_FINDINGS  # findings listed per defect class; the rest are counted

    # ---- selection -------------------------------------------------------
    def selects(self, rule: type["Rule"]) -> bool:
        chosen = _best(self.select or ("ALL",), rule)
        dropped = _best(self.ignore, rule)
        return chosen > dropped

    def select_rules(self, rules: Iterable[type["Rule"]]) -> list[type["Rule"]]:
        """The selected rules, in code order; a full code that names no known rule is an error."""
        rules = sorted(rules, key=lambda r: r.code)
        known = {r.code for r in rules}
        for key, sels in (("select", self.select), ("ignore", self.ignore), ("severity", tuple(self.severity))):
            for s in sels:
                if len(s) == 5 and _CODE_PREFIX.match(s) and s not in known:
                    if key != "severity" and s in self.cli:
                        raise ConfigError("command line", f"--{key}", f"unknown rule code {s!r}")
                    raise ConfigError(self.path, key, f"unknown rule code {s!r}")
        for code, opts in self.options.items():
            rule = next((r for r in rules if r.code == code), None)
            if rule is None:
                raise ConfigError(self.path, f"options.{code}", f"unknown rule code {code!r}")
            for name, value in opts.items():
                if name not in rule.options:
                    allowed = ", ".join(sorted(rule.options)) or "none"
                    raise ConfigError(self.path, f"options.{code}.{name}",
                                      f"unknown option (rule {code} takes: {allowed})")
                default = rule.options[name]
                if default is not None and not _same_type(default, value):
                    raise ConfigError(self.path, f"options.{code}.{name}",
                                      f"expected {type(default).__name__}, got {value!r}")
                bad = _bad_name(default, value)
                if bad is not None:
                    raise ConfigError(self.path, f"options.{code}.{name}", bad)
        return [r for r in rules if self.selects(r)]

    def severity_for(self, rule: type["Rule"]) -> str | None:
        """The configured level for a rule, if any selector in ``severity`` matches it."""
        best, level = -1, None
        for sel, lvl in self.severity.items():
            s = _specificity(sel, rule)
            if s > best:
                best, level = s, lvl
        return level

    def options_for(self, rule: type["Rule"]) -> dict[str, Any]:
        return {**dict(rule.options), **dict(self.options.get(rule.code, {}))}

    def with_overrides(self, select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
                       fail_on: str | None = None, window_events: int | None = None,
                       jobs: int | None = None, max_findings: int | None = None,
                       where: str = "command line") -> "Config":
        """Command-line values: --select replaces the file's select, --ignore adds to its ignore."""
        out = self
        if select:
            sel = _selectors(list(select), where, "--select")
            out = replace(out, select=sel, cli=out.cli + sel)
        if ignore:
            ign = _selectors(list(ignore), where, "--ignore")
            out = replace(out, ignore=out.ignore + ign, cli=out.cli + ign)
        if fail_on is not None:
            out = replace(out, fail_on=_level(fail_on, where, "--fail-on", FAIL_ON))
        if window_events is not None:
            out = replace(out, window_events=_positive(window_events, where, "--window-events"))
        if jobs is not None:
            out = replace(out, jobs=_positive(jobs, where, "--jobs"))
        if max_findings is not None:
            out = replace(out, max_findings=_positive(max_findings, where, "--max-findings"))
        return out


def _names(value: Any) -> list | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _bad_name(default: Any, value: Any) -> str | None:
    """An option whose default names members of one contract enum (e.g. engines) takes only that enum's names.

    The rule would reject the name only once it runs, as a crash; said here it is a config error.
    """
    from ingest.contract import COLUMNS

    given, known = _names(value), _names(default)
    if not given or not known:
        return None
    enums = {c.enum for c in COLUMNS if c.enum is not None and all(k in c.enum.wires() for k in known)}
    if len(enums) != 1:
        return None
    choices = [w for w in next(iter(enums)).wires() if w]
    for v in given:
        if v not in choices:
            return f"{v!r} is not one of {', '.join(repr(c) for c in choices)}"
    return None


def _same_type(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def _specificity(selector: str, rule: type["Rule"]) -> int:
    """How specifically ``selector`` names ``rule``: -1 not at all, 0 ALL, 1 family, else prefix length."""
    if selector == "ALL":
        return 0
    family = getattr(rule.family, "value", rule.family)
    if selector == family:
        return 2  # as specific as "MT" + one digit: a family is one code hundred
    if rule.code.startswith(selector):
        return len(selector)
    return -1


def _best(selectors: Iterable[str], rule: type["Rule"]) -> int:
    return max((_specificity(s, rule) for s in selectors), default=-1)


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------


def find_config(start: str | Path) -> Path | None:
    """The nearest moetrace.toml, or pyproject.toml with a [tool.moetrace] table, from start upward."""
    here = Path(start).resolve()
    if here.is_file() or not here.exists():
        here = here.parent
    for d in (here, *here.parents):
        for name in CONFIG_FILES:
            p = d / name
            if not p.is_file():
                continue
            if name == "pyproject.toml":
                try:
                    doc = tomllib.loads(p.read_text())
                except (OSError, tomllib.TOMLDecodeError):
                    return p  # let load_config report it, naming the file
                if "moetrace" not in doc.get("tool", {}):
                    continue
            return p
    return None


def load_config(path: str | Path | None = None, search_from: Sequence[str | Path] = ()) -> Config:
    """Load an explicit file, or the first one found from each of ``search_from`` upward; defaults if none."""
    if path is None:
        for start in search_from:
            path = find_config(start)
            if path is not None:
                break
        else:
            return Config()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(path, "", f"cannot read config: {e.strerror or e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # Python 3.11's error has no line attribute: lift "(at line L, column C)" out of the text.
        m = re.search(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$", str(e))
        where = "" if not m else (f"line {m.group(1)}, column {m.group(2)}" if m.group(1) else "end of file")
        raise ConfigError(path, where, f"invalid TOML: {str(e)[:m.start()] if m else e}") from None
    if path.name == "pyproject.toml":
        table = doc.get("tool", {}).get("moetrace", {})
        prefix = "tool.moetrace."
    else:
        table, prefix = doc, ""
    return parse_config(table, path, prefix)


def parse_config(table: Mapping[str, Any], path: str | Path | None = None, prefix: str = "") -> Config:
    if not isinstance(table, Mapping):
        raise ConfigError(path, prefix.rstrip("."), "must be a table")
    for k in table:
        if k not in _KEYS:
            raise ConfigError(path, prefix + k, f"unknown key (expected one of {', '.join(_KEYS)})")
    select = _selectors(table.get("select", []), path, prefix + "select")
    ignore = _selectors(table.get("ignore", []), path, prefix + "ignore")
    fail_on = _level(table.get("fail-on", "error"), path, prefix + "fail-on", FAIL_ON)
    raw_sev = table.get("severity", {})
    if not isinstance(raw_sev, Mapping):
        raise ConfigError(path, prefix + "severity", "must be a table of selector = level")
    severity: dict[str, str] = {}
    for sel, lvl in raw_sev.items():
        _selectors([sel], path, f"{prefix}severity.{sel}")
        severity[sel] = _level(lvl, path, f"{prefix}severity.{sel}", LEVELS)
    raw_opts = table.get("options", {})
    if not isinstance(raw_opts, Mapping):
        raise ConfigError(path, prefix + "options", "must be a table of [options.CODE] tables")
    options: dict[str, dict[str, Any]] = {}
    for code, opts in raw_opts.items():
        if not isinstance(opts, Mapping):
            raise ConfigError(path, f"{prefix}options.{code}", "must be a table of option = value")
        options[code] = dict(opts)
    window = _positive(table.get("window-events", WINDOW_EVENTS), path, prefix + "window-events")
    jobs = _positive(table.get("jobs", 1), path, prefix + "jobs")
    cap = _positive(table.get("max-findings", MAX_FINDINGS), path, prefix + "max-findings")
    return Config(select, ignore, severity, options, fail_on, window, jobs, None if path is None else Path(path),
                  max_findings=cap)


def _positive(value: Any, path, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(path, key, f"must be a positive integer, not {value!r}")
    return value


def _selectors(value: Any, path, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(path, key, "must be a list of rule codes, code prefixes or family names")
    out = []
    for item in value:
        parts = [p.strip() for p in item.split(",")] if isinstance(item, str) else [item]
        for p in parts:
            if isinstance(p, str) and _CODE_PREFIX.match(p.upper()):
                p = p.upper()  # codes are upper case; accept mt101 as people type it
            if not isinstance(p, str) or not (p == "ALL" or p in FAMILIES or _CODE_PREFIX.match(p)):
                raise ConfigError(path, key, f"{p!r} is not a rule code, code prefix (MT1), family name or ALL")
            out.append(p)
    return tuple(out)


def _level(value: Any, path, key: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(path, key, f"{value!r} is not one of {', '.join(map(repr, allowed))}")
    return value
