"""Coded errors of the ``mscale`` package.

Every error the package raises on purpose carries a stable code, printed the way the C++ tools print
theirs (``error[ERR_PY_021]: snapshot directory '/ckpt' is not writable: ...``), documented in
``docs/error_codes.md`` and explained by ``mscalec --explain ERR_PY_021``.  The codes, their
message formats and one-line summaries live in this package's ``Diagnostics*.def`` files, in the
same ``DIAG(CODE, Severity, "format with %0 %1", "summary")`` rows as the C++ layers' tables: the
build checks them against the documentation together with the C++ codes.
"""

from __future__ import annotations

import pathlib
import re
from typing import Dict, List, NamedTuple, Optional


class CodeInfo(NamedTuple):
    code: str
    severity: str  # "Error" | "Warning"
    message: str   # format with %0, %1, ...
    summary: str


_ROW = re.compile(r'^DIAG\((\w+),\s*(\w+),\s*"((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)"\)', re.M)


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _load_table() -> Dict[str, CodeInfo]:
    table: Dict[str, CodeInfo] = {}
    for path in sorted(pathlib.Path(__file__).with_name("errors.py").parent.glob("Diagnostics*.def")):
        for m in _ROW.finditer(path.read_text(encoding="utf-8")):
            table[m.group(1)] = CodeInfo(m.group(1), m.group(2), _unescape(m.group(3)), _unescape(m.group(4)))
    return table


CODES: Dict[str, CodeInfo] = _load_table()


def format_message(code: str, *args: object) -> str:
    """The message of ``code`` with ``%0``, ``%1``, ... replaced by ``args``."""
    info = CODES[code]  # a KeyError here is a bug in the package: every code it raises is in the table
    return re.sub(r"%(\d)", lambda m: str(args[int(m.group(1))]), info.message)


class MScaleError(Exception):
    """Base of the package's coded errors.  ``str(e)`` is ``error[CODE]: message``.

    ``retry_cannot_fix`` says whether restarting the same job on the same inputs would meet the
    error again: a supervised worker that dies of such an error tells the supervisor so, which then
    stops (ERR_EXEC_030) instead of spending its restart budget."""

    retry_cannot_fix = False

    def __init__(self, code: str, *args: object, notes: Optional[List[str]] = None) -> None:
        self.code = code
        self.message = format_message(code, *args)
        self.notes: List[str] = list(notes or [])
        super().__init__(self.render())

    def render(self) -> str:
        severity = "warning" if CODES[self.code].severity == "Warning" else "error"
        lines = ["%s[%s]: %s" % (severity, self.code, self.message)]
        lines += ["note: " + n for n in self.notes]
        return "\n".join(lines)


class SnapshotError(MScaleError):
    """Saving or restoring exact-resume state failed (the snapshot store, its files, its contents)."""


class ResumeError(MScaleError):
    """A restarted job cannot continue where it stopped; it never silently starts over.  The
    snapshots are what they are: a restart finds the same ones."""

    retry_cannot_fix = True


class UsageError(MScaleError, TypeError):
    """An argument the package cannot use (a wrong type, an unknown key, a missing piece).  The
    program passes the same argument again after a restart."""

    retry_cannot_fix = True
