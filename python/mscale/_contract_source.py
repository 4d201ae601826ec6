"""Contract source text from ``@mscale_contract``'s arguments, and where each line came from.

The field list and each field's kind come from ``mscalec --list-fields=json``; this module only writes
values in the language's syntax, so every rule about what a value may be stays in the compiler.
"""

from __future__ import annotations

import ast
import dataclasses
import decimal
import difflib
import json
import linecache
import math
import re
import types
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

KeyPath = Tuple[str, ...]

#: The decorator's own keywords besides the language's contract-level fields.
SECTION_KEYWORDS = ("compute_profile", "io_topology", "fault_tolerance", "scaling", "policy")
OPTION_KEYWORDS = ("name", "file", "topology", "agent_socket")

#: A role key that is the decorator's, not the language's: the page count of a 'hugepage_2MB' pool.
POOL_COUNT_KEY = "memory_pool_count"

#: What the generated contract imports so that every stdlib profile name resolves.
STDLIB_PROFILES_IMPORT = "profiles/models.msc"


class SpecProblem(Exception):
    """A decorator argument the generator cannot write; ``contract.py`` turns it into a coded error
    located at the argument (``path``)."""

    def __init__(self, code: str, *args: object, path: KeyPath = (), notes: Optional[List[str]] = None) -> None:
        super().__init__(code)
        self.code = code
        self.args_ = args
        self.path = path
        self.notes = list(notes or [])


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of ``mscalec --list-fields=json``."""

    section: str      # "contract", "role", "fault_tolerance", "scaling" or "policy"
    name: str
    kind: str         # the compiler's kind id (ir/Schema.cpp: fieldKindId); a key of EXPECTED
    description: str  # the compiler's words for the value, e.g. "a duration (e.g. 10s)"
    default: Optional[str] = None  # as the language writes it ("200ms"), when the field has one


#: What ERR_PY_002 says a key of each kind takes, in Python terms.
EXPECTED = {
    "int": "an int",
    "number": "an int or a float",
    "bool": "a bool",
    "string": "a single-line str",
    "size": "a size such as '2MiB'",
    "duration": "a duration such as '200ms'",
    "temperature": "a temperature such as '70C' or a number of degrees Celsius",
    "percentage": "a percentage such as '15%'",
    "bandwidth": "a bandwidth such as '100Gbps'",
    "cpus": "a list or range of CPU numbers, or a str such as '0-3,8'",
    "names": "a list of names such as ['bf16']",
    "name": "a name (a str such as 'numa_first')",
    "gpu": "a GPU index (int), a PCI address such as '0000:03:00.0', or a UUID str",
    "pcie_domain": "a PCIe domain and bus such as '0000:81'",
    "rdma_port": "an RDMA port such as 'mlx5_0:1'",
    "pool": "'hugepage_2MB' or 'hugepage_1GB' (pages in 'memory_pool_count'), or 'hugepages(2MiB, count = N)'",
    "cadence": "'step_N', an int number of steps, a duration such as '10min', or 'every(...)'",
    "count": "an int, or a range of ints: (MIN, MAX) or a str such as '2..4'",
    "samples": "an int number of samples, or a str such as '256 samples'",
    "raw": "a str, int, float or bool",
    "section": "a dict of field names to values",
    "roles": "a dict of role names to dicts of fields",
    "profile": "a profile name such as 'mlvm_heavy' or 'mlvm-heavy'",
    "identifier": "a name of letters, digits, '_' and '-' that starts with a letter or '_'",
}

_SECTION_OF_HEADER = {"contract/profile": "contract", "io_topology.<role>": "role",
                      "fault_tolerance": "fault_tolerance", "scaling": "scaling", "policy": "policy"}


def parse_field_reference(text: str) -> Dict[str, Dict[str, Field]]:
    """The fields of ``mscalec --list-fields=json``, by section and name. A kind this module does not
    know (a newer compiler's) is written as given ("raw"); anything that is not the array of field
    objects gives no fields (the caller reports ERR_PY_009)."""
    try:
        rows = json.loads(text)
    except ValueError:
        return {}
    fields: Dict[str, Dict[str, Field]] = {}
    if not isinstance(rows, list):
        return {}
    for row in rows:
        if not isinstance(row, dict) or row.get("section") not in _SECTION_OF_HEADER:
            continue
        name, kind = row.get("name"), row.get("kind")
        if not isinstance(name, str) or not isinstance(kind, str):
            continue
        section = _SECTION_OF_HEADER[row["section"]]
        default = row.get("default")
        fields.setdefault(section, {})[name] = Field(
            section, name, kind if kind in EXPECTED else "raw", str(row.get("description", "")),
            default if isinstance(default, str) else None)
    return fields


def did_you_mean(word: str, choices: Iterable[str]) -> List[str]:
    """The note of an unknown key: the closest known one, if any is close."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return ["did you mean '%s'?" % close[0]] if close else []


def dotted(path: KeyPath) -> str:
    return ".".join(path)


# ---------------------------------------------------------------------------------------------
# Values in the language's syntax. Only the shape of a token is checked here (so that the generated
# text parses as what the user meant); whether a value is allowed is the compiler's to say.

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_QUANTITY = re.compile(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z_][A-Za-z0-9_]*|%)")
_PCI = re.compile(r"[0-9a-fA-F]+:[0-9a-fA-F]+(?::[0-9a-fA-F]+)?(?:\.[0-9a-fA-F]+)?")
_CPU_PART = re.compile(r"\s*(\d+)\s*(?:(?:-|\.\.)\s*(\d+)\s*)?")
_HUGEPAGE = re.compile(r"hugepages?[_-](\d+)\s*([KMGT])i?B", re.I)
_STEPS = re.compile(r"(?:steps?[_-]?\s*(\d+)|(\d+)\s*steps?)", re.I)
_CALL = re.compile(r"(hugepages|every)\s*\([^;{}\"\n]*\)")


def got(value: Any) -> str:
    """What ERR_PY_002 says it got: the type and a short repr."""
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return "%s %s" % (type(value).__name__, text)


def _wrong(path: KeyPath, kind: str, value: Any) -> SpecProblem:
    return SpecProblem("ERR_PY_002", dotted(path), EXPECTED[kind], got(value), path=path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_text(value: float) -> str:
    """A Python number as the language's NUMBER token (no exponent, no 'inf')."""
    if _is_int(value):
        return str(value)
    text = repr(float(value))
    if "e" in text or "E" in text:
        text = format(decimal.Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def is_identifier(text: str) -> bool:
    """True when ``text`` is one IDENT token of the language (which 'true'/'false' are not)."""
    return bool(_IDENT.fullmatch(text)) and text not in ("true", "false")


def _quantity(value: Any, path: KeyPath, kind: str) -> str:
    if isinstance(value, str):
        m = _QUANTITY.fullmatch(value.strip())
        if m:
            return m.group(1) + m.group(2)
    raise _wrong(path, kind, value)


def _string(value: Any, path: KeyPath, kind: str = "string") -> str:
    if not isinstance(value, str) or "\n" in value or "\r" in value:
        raise _wrong(path, kind, value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cpus(value: Any, path: KeyPath) -> str:
    parts: List[str] = []

    def add(item: Any) -> None:
        if _is_int(item):
            parts.append(str(item))
        elif isinstance(item, range) and item.step == 1:
            if len(item) == 1:
                parts.append(str(item.start))
            elif len(item) > 1:
                parts.append("%d..%d" % (item.start, item.stop - 1))
        elif isinstance(item, range):
            parts.extend(str(i) for i in item)
        else:
            raise _wrong(path, "cpus", value)

    if isinstance(value, str):
        for piece in value.split(","):
            m = _CPU_PART.fullmatch(piece)
            if not m:
                raise _wrong(path, "cpus", value)
            parts.append(m.group(1) if m.group(2) is None else "%s..%s" % (m.group(1), m.group(2)))
    elif isinstance(value, range):
        add(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        # A set has no order of its own; sorted, the generated text is the same in every run.
        for item in (sorted(value) if isinstance(value, (set, frozenset)) else value):
            add(item)
    else:
        raise _wrong(path, "cpus", value)
    return "[" + ", ".join(parts) + "]"


def _names(value: Any, path: KeyPath) -> str:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) and is_identifier(i) for i in items):
        raise _wrong(path, "names", value)
    return "[" + ", ".join(items) + "]"


def _pool(value: Any, count: Any, path: KeyPath) -> str:
    count_path = path[:-1] + (POOL_COUNT_KEY,)
    if isinstance(value, str):
        text = value.strip()
        m = _HUGEPAGE.fullmatch(text)
        if m:
            # Hugepage sizes are powers of two whatever the spelling: 'hugepage_2MB' is 2 MiB pages.
            page = "%s%siB" % (m.group(1), m.group(2).upper())
            if count is None:
                # The compiler says that a pool needs 'count = N' (ERR_SEM_013), at this key.
                return "hugepages(%s)" % page
            if not _is_int(count):
                raise _wrong(count_path, "int", count)
            return "hugepages(%s, count = %d)" % (page, count)
        if _CALL.fullmatch(text) and text.startswith("hugepages"):
            if count is not None:
                raise SpecProblem("ERR_PY_010", "'%s' goes with 'memory_pool': 'hugepage_SIZE', not with a "
                                  "hugepages(...) call, which has its own count" % POOL_COUNT_KEY, path=count_path)
            return text
    raise _wrong(path, "pool", value)


def _cadence(value: Any, path: KeyPath) -> str:
    if _is_int(value):
        return "every(%d steps)" % value
    if isinstance(value, str):
        text = value.strip()
        m = _STEPS.fullmatch(text)
        if m:
            return "every(%s steps)" % (m.group(1) or m.group(2))
        if _CALL.fullmatch(text) and text.startswith("every"):
            return text
        q = _QUANTITY.fullmatch(text)
        if q:
            return "every(%s%s)" % (q.group(1), q.group(2))
    raise _wrong(path, "cadence", value)


_SAMPLES = re.compile(r"[0-9]+ *samples?")
_COUNT_RANGE = re.compile(r"([0-9]+) *\.\. *([0-9]+)")


def _count(value: Any, path: KeyPath) -> str:
    """``nodes``: 4, (2, 4), [2, 4] or '2..4' (the compiler checks the bounds and their order)."""
    if _is_int(value) and value >= 0:
        return str(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_int(v) and v >= 0 for v in value):
        return "%d..%d" % tuple(value)
    if isinstance(value, str):
        m = _COUNT_RANGE.fullmatch(value.strip())
        if m:
            return "%s..%s" % m.groups()
    raise _wrong(path, "count", value)


def render_value(field: Field, value: Any, path: KeyPath, role: Optional[Mapping[str, Any]] = None) -> str:
    """``value`` of ``field`` in the language's syntax, or a SpecProblem naming ``path``."""
    kind = field.kind
    if kind == "int":
        if not _is_int(value):
            raise _wrong(path, kind, value)
        return str(value)
    if kind == "number":
        if not (_is_int(value) or isinstance(value, float)) or not math.isfinite(value):
            raise _wrong(path, kind, value)
        return number_text(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise _wrong(path, kind, value)
        return "true" if value else "false"
    if kind in ("string", "pcie_domain", "rdma_port"):
        return _string(value, path, kind)
    if kind in ("size", "duration", "percentage", "bandwidth"):
        return _quantity(value, path, kind)
    if kind == "temperature":
        if (_is_int(value) or isinstance(value, float)) and math.isfinite(value):
            return number_text(value) + "C"
        return _quantity(value, path, kind)
    if kind == "cpus":
        return _cpus(value, path)
    if kind == "names":
        return _names(value, path)
    if kind == "name":
        if not isinstance(value, str) or not is_identifier(value):
            raise _wrong(path, kind, value)
        return value
    if kind == "gpu":
        if _is_int(value):
            return str(value)
        if isinstance(value, str) and _PCI.fullmatch(value.strip()):
            return value.strip()
        return _string(value, path, kind)
    if kind == "pool":
        return _pool(value, (role or {}).get(POOL_COUNT_KEY), path)
    if kind == "cadence":
        return _cadence(value, path)
    if kind == "count":
        return _count(value, path)
    if kind == "samples":
        if _is_int(value) and value >= 0:
            return "%d samples" % value
        if isinstance(value, str) and _SAMPLES.fullmatch(value.strip()):
            return " ".join(value.split())
        raise _wrong(path, kind, value)
    # A kind this module does not know yet: numbers, booleans and token-shaped text as written.
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_int(value) or (isinstance(value, float) and math.isfinite(value)):
        return number_text(value)
    if isinstance(value, str) and (_QUANTITY.fullmatch(value) or _PCI.fullmatch(value) or _CALL.fullmatch(value)):
        return value
    if isinstance(value, str):
        return _string(value, path, "raw")
    raise _wrong(path, "raw", value)


# ---------------------------------------------------------------------------------------------
# The generated text and its line map.

@dataclasses.dataclass(frozen=True)
class Segment:
    """From ``column`` (1-based) on, a generated line was made by the argument at ``path``;
    ``part`` says whether by its key or its value."""

    column: int
    path: KeyPath
    part: str  # "key" | "value"


@dataclasses.dataclass
class Generated:
    text: str
    #: generated line number (1-based) -> its segments, by column
    lines: Dict[int, List[Segment]]

    def origin(self, line: int, column: Optional[int]) -> Optional[Segment]:
        """The argument that produced ``line``:``column`` of the generated text."""
        segments = self.lines.get(line)
        if not segments:
            return None
        best = segments[0]
        for segment in segments:
            if column is not None and segment.column <= column:
                best = segment
        return best


class _Writer:
    def __init__(self) -> None:
        self.out: List[str] = []
        self.map: Dict[int, List[Segment]] = {}

    def line(self, text: str, *segments: Tuple[int, KeyPath, str]) -> None:
        self.out.append(text)
        self.map[len(self.out)] = [Segment(c, p, part) for c, p, part in segments]

    def field(self, indent: str, name: str, value: str, path: KeyPath) -> None:
        key_col = len(indent) + 1
        self.line("%s%s = %s;" % (indent, name, value), (key_col, path, "key"),
                  (key_col + len(name) + 3, path, "value"))


def _check_keys(given: Iterable[str], known: Mapping[str, Any], path: KeyPath, where: str,
                extra: Sequence[str] = ()) -> None:
    for key in given:
        if not isinstance(key, str):
            raise SpecProblem("ERR_PY_002", dotted(path), "a dict with str keys", got(key), path=path)
        if key not in known and key not in extra:
            raise SpecProblem("ERR_PY_001", key, where, path=path + (key,),
                              notes=did_you_mean(key, list(known) + list(extra)))


def _section(w: _Writer, indent: str, title: str, values: Any, fields: Mapping[str, Field], path: KeyPath,
             extra: Sequence[str] = ()) -> None:
    if not isinstance(values, Mapping):
        raise _wrong(path, "section", values)
    _check_keys(values, fields, path, "'%s'" % dotted(path), extra)
    w.line("%s%s {" % (indent, title), (len(indent) + 1, path, "key"))
    for key, value in values.items():
        if key in extra:
            continue
        w.field(indent + "  ", key, render_value(fields[key], value, path + (key,), values), path + (key,))
    w.line("%s}" % indent, (1, path, "key"))


def generate(name: str, profile: Optional[str], compute: Mapping[str, Any], sections: Mapping[str, Any],
             schema: Mapping[str, Mapping[str, Field]], origin: str = "") -> Generated:
    """The contract source of one decorator: deterministic (the same arguments give the same text)
    and readable, one field per line so that a diagnostic's line names one argument."""
    w = _Writer()
    w.line("// Generated by @mscale_contract%s; change the decorator, not this text." % origin)
    w.line('import "%s";' % STDLIB_PROFILES_IMPORT)
    w.line("")
    head = "contract %s" % name
    segments: List[Tuple[int, KeyPath, str]] = [(1, (), "key"), (len("contract ") + 1, ("name",), "value")]
    if profile is not None:
        segments.append((len(head) + len(" uses profile ") + 1, ("compute_profile",), "value"))
        head += " uses profile %s" % profile
    w.line(head + " {", *segments)
    contract_fields = schema.get("contract", {})
    for key, value in compute.items():
        w.field("  ", key, render_value(contract_fields[key], value, (key,)), (key,))
    roles = sections.get("io_topology")
    if roles is not None:
        if not isinstance(roles, Mapping):
            raise _wrong(("io_topology",), "roles", roles)
        w.line("  io_topology {", (3, ("io_topology",), "key"))
        for role, values in roles.items():
            if not isinstance(role, str) or not is_identifier(role):
                raise SpecProblem("ERR_PY_002", "io_topology", "a dict whose keys are role names (%s)"
                                  % EXPECTED["identifier"], got(role), path=("io_topology",))
            _section(w, "    ", role, values, schema.get("role", {}), ("io_topology", role), extra=(POOL_COUNT_KEY,))
            if isinstance(values, Mapping) and POOL_COUNT_KEY in values and "memory_pool" not in values:
                raise SpecProblem("ERR_PY_010", "'%s' needs 'memory_pool' in the same role" % POOL_COUNT_KEY,
                                  path=("io_topology", role, POOL_COUNT_KEY))
        w.line("  }", (1, ("io_topology",), "key"))
    for section in ("fault_tolerance", "scaling", "policy"):
        if sections.get(section) is not None:
            _section(w, "  ", section, sections[section], schema.get(section, {}), (section,))
    w.line("}", (1, (), "key"))
    return Generated("\n".join(w.out) + "\n", w.map)


# ---------------------------------------------------------------------------------------------
# Where the decorator's arguments are in the caller's source.

@dataclasses.dataclass(frozen=True)
class Span:
    line: int
    column: int                # 1-based, in characters
    end_column: Optional[int]  # exclusive; None when the span runs past the line


@dataclasses.dataclass
class CallSite:
    """The ``mscale_contract(...)`` call in the caller's file, with the span of every argument's key
    and value by key path; ``()`` is the call itself."""

    file: str
    spans: Dict[KeyPath, Dict[str, Span]]

    def locate(self, path: KeyPath, part: str = "key") -> Span:
        """The span of ``path``'s ``part``, or of the nearest enclosing argument that has one (an
        argument given as a variable has no spans inside it)."""
        for n in range(len(path), -1, -1):
            spans = self.spans.get(path[:n])
            if spans:
                return spans.get(part if n == len(path) else "key") or spans["key"]
        return Span(1, 1, None)


def _char_column(lines: Sequence[str], line: int, byte_col: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1


def _span(lines: Sequence[str], node: ast.AST, width: Optional[int] = None) -> Span:
    start = _char_column(lines, node.lineno, node.col_offset)
    if width is not None:
        return Span(node.lineno, start, start + width)
    end_line = getattr(node, "end_lineno", None)
    end = getattr(node, "end_col_offset", None)
    if end_line != node.lineno or end is None:
        return Span(node.lineno, start, None)
    return Span(node.lineno, start, _char_column(lines, node.lineno, end))


def _walk_value(lines: Sequence[str], node: ast.AST, path: KeyPath, out: Dict[KeyPath, Dict[str, Span]]) -> None:
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out[path + (key.value,)] = {"key": _span(lines, key), "value": _span(lines, value)}
                _walk_value(lines, value, path + (key.value,), out)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        for kw in node.keywords:
            if kw.arg:
                out[path + (kw.arg,)] = {"key": _span(lines, kw, len(kw.arg)), "value": _span(lines, kw.value)}
                _walk_value(lines, kw.value, path + (kw.arg,), out)


def _is_contract_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name == "mscale_contract"


def locate_call(frame: types.FrameType) -> CallSite:
    """The spans of the ``mscale_contract(...)`` call that ``frame`` is making. Without the source
    (an interactive session, a zip without it), every argument is located at the calling line."""
    file = frame.f_code.co_filename
    lines = linecache.getlines(file, frame.f_globals)
    here = lines[frame.f_lineno - 1] if 0 < frame.f_lineno <= len(lines) else ""
    column = here.find("mscale_contract") + 1 or 1
    fallback = CallSite(file, {(): {"key": Span(frame.f_lineno, column, None)}})
    if not lines:
        return fallback
    try:
        tree = ast.parse("".join(lines), file)
    except (SyntaxError, ValueError):
        return fallback
    calls = [n for n in ast.walk(tree) if _is_contract_call(n)]
    want: Optional[Tuple[int, int]] = None
    try:
        # Python 3.11+: the exact position of the instruction making the call.
        position = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        if position[0] is not None and position[2] is not None:
            want = (position[0], position[2])
    except (AttributeError, IndexError):
        pass
    call = next((c for c in calls if want and (c.lineno, c.col_offset) == want), None)
    if call is None:
        around = [c for c in calls if c.lineno <= frame.f_lineno <= (c.end_lineno or c.lineno)]
        call = around[-1] if around else None
    if call is None:
        return fallback
    spans: Dict[KeyPath, Dict[str, Span]] = {(): {"key": _span(lines, call.func)}}
    for kw in call.keywords:
        if kw.arg:
            spans[(kw.arg,)] = {"key": _span(lines, kw, len(kw.arg)), "value": _span(lines, kw.value)}
            _walk_value(lines, kw.value, (kw.arg,), spans)
    return CallSite(file, spans)
