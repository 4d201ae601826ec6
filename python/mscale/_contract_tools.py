"""The project's tools as the contract decorator runs them, and their diagnostics in Python terms.

The tools are found in ``$MSCALE_BIN``, else the build tree next to this package, else the ``bin/``
of the prefix the package is installed in, else ``PATH``. Their JSON diagnostics become
``Diagnostic`` objects that print clang-style.
"""

from __future__ import annotations

import dataclasses
import json
import linecache
import os
import pathlib
import re
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Sequence, Tuple

TOOLS_ENV = "MSCALE_BIN"


class ToolMissing(Exception):
    """A tool is in none of the places searched; ``places`` says which (for the error's notes)."""

    def __init__(self, tool: str, places: List[str]) -> None:
        super().__init__(tool)
        self.tool = tool
        self.places = places


def _executable(path: pathlib.Path) -> bool:
    return path.is_file() and os.access(str(path), os.X_OK)


def find_tool(name: str) -> str:
    """The path of the project's tool ``name`` (``mscalec``, ``mscale-plan``, ``mscale-cli``).

    ``$MSCALE_BIN``, when set, is the only place looked in: a tool found elsewhere would be another
    build than the one asked for."""
    env = os.environ.get(TOOLS_ENV)
    if env:
        candidate = pathlib.Path(env) / name
        if _executable(candidate):
            return str(candidate)
        raise ToolMissing(name, ["%s='%s' (set, so nothing else is searched)" % (TOOLS_ENV, env)])
    package = pathlib.Path(__file__).resolve().parent
    places: List[Tuple[str, pathlib.Path]] = [("the build tree", package.parents[1] / "build" / "bin" / name)]
    # An installed package (<prefix>/lib/python3/dist-packages/mscale) runs the tools of its prefix.
    if re.search(r"/lib/python3[^/]*/(site|dist)-packages$", str(package.parent)):
        places.append(("the install prefix", package.parents[3] / "bin" / name))
    for _, candidate in places:
        if _executable(candidate):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(name, ["%s '%s'" % (what, path.parent) for what, path in places] + ["PATH"])


@dataclasses.dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_tool(argv: Sequence[str], timeout: float = 120.0) -> Completed:
    """Runs a tool to completion with its output captured (text, UTF-8)."""
    proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, check=False)
    return Completed(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


# ---------------------------------------------------------------------------------------------
# Diagnostics.

@dataclasses.dataclass
class Location:
    file: str
    line: int
    column: int
    end_column: Optional[int] = None  # exclusive, on the same line; None: one caret

    def __str__(self) -> str:
        return "%s:%d:%d" % (self.file, self.line, self.column)


@dataclasses.dataclass
class FixIt:
    """Replace the text at ``location`` with ``replacement`` (contract-language text)."""

    location: Optional[Location]
    replacement: str


@dataclasses.dataclass
class Note:
    message: str
    location: Optional[Location] = None
    fixits: List[FixIt] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Diagnostic:
    """One diagnostic of the compiler (or of the package), located where the user can act on it: in
    the Python file of the decorator for a generated contract, in the ``.msc`` file otherwise."""

    code: str
    severity: str  # "error" | "warning" | "note"
    message: str
    location: Optional[Location] = None
    notes: List[Note] = dataclasses.field(default_factory=list)
    fixits: List[FixIt] = dataclasses.field(default_factory=list)
    #: the generated contract line the compiler pointed at, when the location was mapped back
    generated_line: Optional[str] = None

    def render(self) -> str:
        """Clang-style: ``file:line:col: error[CODE]: message``, the source line with a caret, notes."""
        out = [_head(self.location, "%s[%s]" % (self.severity, self.code), self.message)]
        out += _excerpt(self.location)
        out += _fixit_lines(self.fixits)
        if self.generated_line is not None:
            out.append("note: in the generated contract: %s" % self.generated_line.strip())
        for note in self.notes:
            out.append(_head(note.location, "note", note.message))
            out += _excerpt(note.location)
            out += _fixit_lines(note.fixits)
        return "\n".join(out)


def _head(location: Optional[Location], kind: str, message: str) -> str:
    return ("%s: %s: %s" % (location, kind, message)) if location else ("%s: %s" % (kind, message))


def _excerpt(location: Optional[Location]) -> List[str]:
    if location is None:
        return []
    text = linecache.getline(location.file, location.line).rstrip("\n")
    if not text:
        return []
    width = 1
    if location.end_column is not None and location.end_column > location.column:
        width = location.end_column - location.column
    # Tabs keep their width under the caret so that it lines up in a terminal.
    pad = "".join(c if c == "\t" else " " for c in text[:location.column - 1])
    return [text, pad + "^" + "~" * (width - 1)]


def _fixit_lines(fixits: Sequence[FixIt]) -> List[str]:
    return ["    fix-it: replace with '%s'" % f.replacement for f in fixits]


def _location(obj: Dict[str, Any]) -> Optional[Location]:
    if not obj.get("file") or not obj.get("line"):
        return None
    end = obj.get("endColumn") if obj.get("endLine", obj["line"]) == obj["line"] else None
    return Location(obj["file"], int(obj["line"]), int(obj.get("column") or 1), end)


def _fixits(obj: Dict[str, Any]) -> List[FixIt]:
    return [FixIt(_location(f), str(f.get("replacement", ""))) for f in obj.get("fixits") or []]


def parse_json_diagnostics(stderr: str) -> Optional[List[Diagnostic]]:
    """The diagnostics of ``--diagnostics-format=json`` (one JSON array on stderr), or None when
    stderr holds no such array (a crash, another output)."""
    start = stderr.find("[")
    if start < 0:
        return None
    try:
        items = json.JSONDecoder().raw_decode(stderr[start:])[0]
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    diagnostics = []
    for item in items:
        notes = [Note(str(n.get("message", "")), _location(n), _fixits(n)) for n in item.get("notes") or []]
        diagnostics.append(Diagnostic(str(item.get("code", "")), str(item.get("severity", "error")),
                                      str(item.get("message", "")), _location(item), notes, _fixits(item)))
    return diagnostics


def coded_lines(stderr: str) -> List[str]:
    """The meaningful lines of a tool's text diagnostics (for the notes of a coded error)."""
    return [line.rstrip() for line in stderr.splitlines() if line.strip()]
