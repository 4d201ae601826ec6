"""Finding and loading the worker runtime's C libraries (``libmscale_snapshot.so``,
``libmscale_worker.so``): one search for both, so a build tree, an install and an override behave
the same for each."""

from __future__ import annotations

import ctypes
import os
import pathlib
from typing import Callable, List, Sequence


class LoadFailure(Exception):
    """No candidate loaded; ``str()`` says why for each one tried."""


def library_candidates(names: Sequence[str], env_var: str) -> List[str]:
    """Where a library is looked for, in order: ``env_var`` (the file, or a folder that holds it);
    ``lib/`` beside the tools on ``MSCALE_BIN``; the build tree this package sits in
    (``<repo>/build/lib``); ``lib/`` of the prefix the package is installed under; the dynamic
    loader's path (bare names)."""
    here = pathlib.Path(__file__).resolve().parent
    override = os.environ.get(env_var)
    if override:
        return [os.path.join(override, n) for n in names] if os.path.isdir(override) else [override]
    dirs: List[pathlib.Path] = []
    if os.environ.get("MSCALE_BIN"):
        dirs.append(pathlib.Path(os.environ["MSCALE_BIN"]).parent / "lib")
    dirs.append(here.parent.parent / "build" / "lib")
    for parent in here.parents:  # <prefix>/lib/python3/dist-packages/mscale -> <prefix>/lib
        if parent.name == "lib":
            dirs.append(parent)
            break
    return [str(d / n) for d in dirs for n in names] + list(names)


def load(names: Sequence[str], env_var: str, version_symbol: str, abi_version: int,
         declare: Callable[[ctypes.CDLL], None]) -> ctypes.CDLL:
    """The first candidate that loads and speaks ``abi_version``, its functions declared."""
    candidates = library_candidates(names, env_var)
    reasons: List[str] = []
    for path in candidates:
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            reasons.append(str(e))
            continue
        version_of = getattr(lib, version_symbol, None)
        if version_of is None:
            reasons.append("'%s' is not the library this package needs (no %s)" % (path, version_symbol))
            continue
        version_of.restype, version_of.argtypes = ctypes.c_int, []
        if version_of() != abi_version:
            reasons.append("'%s' has ABI version %d; this package needs %d" % (path, version_of(), abi_version))
            continue
        try:
            declare(lib)
        except AttributeError as e:
            reasons.append("'%s' lacks a function this package calls (%s)" % (path, e))
            continue
        return lib
    if os.environ.get(env_var) and not reasons:
        reasons.append("%s='%s' does not exist" % (env_var, os.environ[env_var]))
    if not reasons:
        reasons.append("'%s' is in none of %s and not on the loader's path" % (
            names[0], ", ".join(sorted({os.path.dirname(c) for c in candidates if os.sep in c}))))
    raise LoadFailure("; ".join(reasons))


class ClosesOnExit:
    """``with`` support and a best-effort close at garbage collection for the objects that hold a
    library handle (readers, loaders, stores); the subclass defines ``close()``."""

    def close(self) -> None:  # overridden
        raise NotImplementedError

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def follow_take_over() -> None:
    """A warm standby (MSCALE_STANDBY=1) is handed the job inside the first call of either library
    that needs it (``take_over()``, a heartbeat, opening snapshots), which changes the C environment
    (the restart reason, a moved device placement, MSCALE_STANDBY gone). ``os.environ`` is Python's
    copy of it: after such a call it is made to match. Cheap once done (one dictionary lookup)."""
    if os.environ.get("MSCALE_STANDBY") != "1":
        return
    libc = ctypes.CDLL(None)
    libc.getenv.restype, libc.getenv.argtypes = ctypes.c_char_p, [ctypes.c_char_p]
    if libc.getenv(b"MSCALE_STANDBY") == b"1":
        return  # still a standby: the call did not need the job
    c_environ = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    now = {}
    i = 0
    while c_environ[i] is not None:
        key, _, value = c_environ[i].decode("utf-8", "surrogateescape").partition("=")
        now[key] = value
        i += 1
    for key in [k for k in os.environ if k not in now]:
        del os.environ[key]
    for key, value in now.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
