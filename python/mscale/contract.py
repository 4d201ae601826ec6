"""``@mscale_contract``: a training function's contract in Python, compiled by the project's ``mscalec``.

The decorator's arguments use the names and values of the contract language
(``docs/contract_language.md``; this package's ``docs/python_contract.md``)::

    from mscale.contract import mscale_contract

    @mscale_contract(
        compute_profile="mlvm-heavy",
        io_topology={
            "image_loader": {"cpu_cores": range(48, 52), "numa_node": 3},
            "patch_embed": {"gpu": "0000:03:00.0", "sm_slices": 1},
            "rdma_cache": {"memory_pool": "hugepage_2MB", "memory_pool_count": 1024},
        },
        fault_tolerance={"recovery_point": "step_128"},
    )
    def train(): ...

Nothing is compiled when the module is imported. The first call of ``train`` (or ``train.check()``)
writes the contract's source, compiles it for the node with ``mscalec`` and then, once per process:
under ``mscale-exec`` (``$MSCALE_PLAN``) checks that the running plan is the one described; with an
agent socket submits the plan; otherwise says on stderr that the contract was only checked. What the
node cannot honour raises ``ContractError`` with the compiler's diagnostics located at the
decorator's arguments. No contract rule is implemented here: the compiler decides.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import pathlib
import re
import shutil
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from mscale import _contract_source as gen
from mscale import _contract_tools as tools
from mscale._contract_tools import Diagnostic, FixIt, Location, Note
from mscale.errors import MScaleError, UsageError

__all__ = ["CheckResult", "Contract", "ContractError", "ContractUsageError", "Diagnostic", "check_file",
           "find_tool", "mscale_contract"]

PathLike = Union[str, "os.PathLike[str]"]
F = TypeVar("F", bound=Callable[..., Any])

#: Set by ``mscale-exec`` in the worker's environment: the plan it runs, and the contract's id.
RUNNING_PLAN_ENV = "MSCALE_PLAN"
RUNNING_CONTRACT_ENV = "MSCALE_CONTRACT"
AGENT_SOCKET_ENV = "MSCALE_AGENT_SOCKET"

# What 'mscale-plan diff' reports that does not make two plans different contracts: the decorator
# writes its own source text, so the source's name and hash differ from a hand-written file's.
_PROVENANCE_OF_SOURCE = ("provenance.source_file", "provenance.source_hash")


class ContractError(MScaleError):
    """A contract that cannot be honoured or enforced: the compiler refused it (``ERR_PY_003``, with
    the compiler's ``diagnostics``), the running plan is another (``ERR_PY_005``), the agent did not
    admit it (``ERR_PY_008``), or the tools are missing or failed.

    ``str(e)`` is clang-style: ``train.py:12:2: error[ERR_PY_003]: ...`` and then each diagnostic
    (``train.py:14:30: error[ERR_HAL_CPU_006]: ...``) with its source line, notes and fix-its."""

    def __init__(self, code: str, *args: object, notes: Optional[List[str]] = None,
                 location: Optional[Location] = None, diagnostics: Sequence[Diagnostic] = (),
                 contract: Optional[str] = None) -> None:
        self.location = location
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        self.contract = contract
        super().__init__(code, *args, notes=notes)

    def located(self, location: Optional[Location]) -> "ContractError":
        """This error, located at ``location`` when it had no location yet (a tool that is
        missing is found missing far from the decorator that needed it)."""
        if self.location is None and location is not None:
            self.location = location
            self.args = (self.render(),)
        return self

    def render(self) -> str:
        head = Diagnostic(self.code, "error", self.message, self.location, [Note(n) for n in self.notes])
        return "\n".join([head.render()] + [d.render() for d in self.diagnostics])


class ContractUsageError(ContractError, UsageError):
    """An argument of ``@mscale_contract`` that cannot be used: an unknown key (``ERR_PY_001``), a
    wrong type or form (``ERR_PY_002``), arguments that do not go together (``ERR_PY_010``)."""


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """A contract the node can honour."""

    contract: str
    #: the compiled plan; it lives in a directory removed when the process exits
    plan: str
    topology: str
    #: the ``.msc`` file compiled (generated, or the one ``file=`` named)
    source_file: str
    #: the generated contract text; None for ``file=``
    source: Optional[str]
    warnings: Tuple[Diagnostic, ...] = ()
    #: what the call did beyond the check: "check", "exec" (the running plan matched) or "agent"
    mode: str = "check"
    #: the id the agent gave the submitted contract (mode "agent")
    contract_id: Optional[str] = None


def find_tool(name: str) -> str:
    """The project's tool ``name``: in ``$MSCALE_BIN``, else the build tree next to this package,
    else the install prefix's ``bin/``, else ``PATH``; ``ERR_PY_004`` when it is nowhere."""
    try:
        return tools.find_tool(name)
    except tools.ToolMissing as missing:
        raise ContractError("ERR_PY_004", name, notes=["searched: " + ", ".join(missing.places)]) from None


# ---------------------------------------------------------------------------------------------
# Per-process state: the field schema and the directory of generated contracts and plans.

_state_lock = threading.Lock()
_schema_cache: Dict[str, Dict[str, Dict[str, gen.Field]]] = {}
_workdir_state: Dict[str, Tuple[int, pathlib.Path]] = {}


def _schema() -> Dict[str, Dict[str, gen.Field]]:
    """The language's fields, asked of the compiler once per process and tool."""
    mscalec = find_tool("mscalec")
    with _state_lock:
        if mscalec not in _schema_cache:
            done = tools.run_tool([mscalec, "--list-fields=json"])
            fields = gen.parse_field_reference(done.stdout) if done.returncode == 0 else {}
            if not fields:
                raise ContractError("ERR_PY_009", "mscalec --list-fields=json",
                                    "exit status %d, no field table" % done.returncode,
                                    notes=tools.coded_lines(done.stderr)[-10:])
            _schema_cache[mscalec] = fields
        return _schema_cache[mscalec]


def _remove_workdir(pid: int, path: pathlib.Path) -> None:
    # A forked child (a data-loader worker) exits through here too; only the creator cleans up.
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def _workdir() -> pathlib.Path:
    with _state_lock:
        held = _workdir_state.get("dir")
        if held is None or held[0] != os.getpid():
            path = pathlib.Path(tempfile.mkdtemp(prefix="mscale-contract-"))
            atexit.register(_remove_workdir, os.getpid(), path)
            held = _workdir_state["dir"] = (os.getpid(), path)
        return held[1]


def _where(topology: str) -> str:
    return "this node" if topology == "live" else "topology '%s'" % os.path.basename(topology.rstrip("/"))


def _compile(argv_tail: List[str], topology: str, plans: pathlib.Path) -> Tuple[int, List[Diagnostic], str]:
    """Runs ``mscalec --diagnostics-format=json --topology T -o DIR ...``; (status, diagnostics, stderr)."""
    mscalec = find_tool("mscalec")
    # -o DIR with --emit=plan writes DIR/<contract>.msp for each contract, however many there are.
    done = tools.run_tool([mscalec, "--diagnostics-format=json", "--emit=plan", "--topology", topology,
                           "-o", str(plans)] + argv_tail)
    diagnostics = tools.parse_json_diagnostics(done.stderr)
    if diagnostics is None:
        raise ContractError("ERR_PY_009", "mscalec", "exit status %d without diagnostics" % done.returncode,
                            notes=tools.coded_lines(done.stderr)[-10:])
    return done.returncode, diagnostics, done.stderr


def _compile_file(path: pathlib.Path, topology: str, profile: Optional[str], location: Optional[Location],
                  label: Optional[str] = None) -> Tuple[Dict[str, str], List[Diagnostic]]:
    """Compiles every contract of ``path``; ({contract: plan path}, warnings) or a ContractError
    that names the contract ``label`` (default: the file's name)."""
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as e:
        raise ContractError("ERR_PY_006", path, e.strerror or str(e), location=location) from None
    plans = pathlib.Path(tempfile.mkdtemp(dir=_workdir(), prefix="file-"))
    tail = (["--profile", profile] if profile else []) + [str(path)]
    status, diagnostics, _ = _compile(tail, topology, plans)
    _raise_if_refused(status, diagnostics, label or path.name, topology, location)
    return {p.stem: str(p) for p in sorted(plans.glob("*.msp"))}, diagnostics


def _raise_if_refused(status: int, diagnostics: List[Diagnostic], name: str, topology: str,
                      location: Optional[Location]) -> None:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    if status == 2:
        # Usage or I/O (a topology file that is not there): not the contract's fault.
        raise ContractError("ERR_PY_009", "mscalec", "exit status 2", location=location,
                            diagnostics=diagnostics, contract=name)
    if status != 0 or errors:
        raise ContractError("ERR_PY_003", name, _where(topology),
                            "%d error%s" % (errors, "" if errors == 1 else "s"),
                            location=location, diagnostics=diagnostics, contract=name)


def check_file(path: PathLike, topology: str = "live", name: Optional[str] = None,
               profile: Optional[str] = None) -> List[CheckResult]:
    """Checks the contracts of a ``.msc`` file against ``topology``: all of them, or the one named.

    Raises ``ContractError`` (``ERR_PY_003``) with the compiler's diagnostics in the ``.msc`` file,
    ``ERR_PY_006`` when the file cannot be read, ``ERR_PY_007`` when ``name`` is not in it."""
    file = pathlib.Path(path)
    plans, warnings = _compile_file(file, str(topology), profile, None, name)
    if name is not None and name not in plans:
        raise ContractError("ERR_PY_007", name, file, notes=_holds(plans))
    chosen = [name] if name is not None else list(plans)
    return [CheckResult(n, plans[n], str(topology), str(file), None, tuple(warnings)) for n in chosen]


def _holds(plans: Mapping[str, str]) -> List[str]:
    return ["the file holds: " + ", ".join("'%s'" % n for n in plans)] if plans else ["the file holds no contract"]


# ---------------------------------------------------------------------------------------------
# The decorator.

class Contract:
    """What ``@mscale_contract(...)`` returns: applied to a function, it gives the function that
    checks (and enforces) the contract before each first call in a process.

    ``check(topology=None)`` compiles the contract (once per process and topology) and returns a
    ``CheckResult``; ``enforce()`` is what a call does; ``source()`` is the generated text."""

    def __init__(self, site: Optional[gen.CallSite], *, profile: Optional[str], compute: Mapping[str, Any],
                 sections: Mapping[str, Any], name: Optional[str], file: Optional[PathLike], topology: str,
                 agent_socket: Optional[PathLike]) -> None:
        self._site = site
        self._profile = profile
        self._compute = dict(compute)
        self._sections = dict(sections)
        self._name = name
        self._file = file
        self.topology = topology
        self.agent_socket = None if agent_socket is None else os.fspath(agent_socket)
        self.function: Optional[Callable[..., Any]] = None
        self._lock = threading.RLock()
        self._checked: Dict[str, Tuple[int, CheckResult]] = {}
        self._enforced: Optional[Tuple[int, CheckResult]] = None

    # -- applying it -------------------------------------------------------------------------

    def __call__(self, function: F) -> F:
        if not callable(function):
            raise self._usage("ERR_PY_010", "@mscale_contract(...) decorates a function, not %s"
                              % type(function).__name__, path=())
        if self.function is not None:
            raise self._usage("ERR_PY_010", "this contract already decorates '%s'; write one decorator a "
                              "function" % self.function.__name__, path=())
        self.function = function
        if self._name is None and self._file is None and not gen.is_identifier(function.__name__):
            raise self._usage("ERR_PY_002", "name", "a contract name (%s)" % gen.EXPECTED["identifier"],
                              "function name %r" % function.__name__, path=())

        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            self.enforce()
            return function(*args, **kwargs)

        checked.mscale_contract = self  # type: ignore[attr-defined]
        checked.check = self.check  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]

    @property
    def name(self) -> Optional[str]:
        """The contract's name: ``name=``, else the function's; None for a ``file=`` contract whose
        file has not been compiled yet."""
        if self._name is not None:
            return self._name
        if self._file is None and self.function is not None:
            return self.function.__name__
        return None

    # -- locations and errors ----------------------------------------------------------------

    def _location(self, path: gen.KeyPath = (), part: str = "key") -> Optional[Location]:
        if self._site is None:
            return None
        span = self._site.locate(path, part)
        return Location(self._site.file, span.line, span.column, span.end_column)

    def _usage(self, code: str, *args: object, path: gen.KeyPath, part: str = "key",
               notes: Optional[List[str]] = None) -> ContractUsageError:
        return ContractUsageError(code, *args, notes=notes, location=self._location(path, part), contract=self.name)

    def _error(self, code: str, *args: object, **kwargs: Any) -> ContractError:
        return ContractError(code, *args, location=self._location(), contract=self.name, **kwargs)

    def _from_problem(self, problem: gen.SpecProblem) -> ContractUsageError:
        part = "value" if problem.code == "ERR_PY_002" else "key"
        return self._usage(problem.code, *problem.args_, path=problem.path, part=part, notes=problem.notes)

    def _map(self, diagnostic: Diagnostic, generated: gen.Generated, msc: pathlib.Path) -> Diagnostic:
        """A diagnostic in the generated text, moved to the decorator argument that made its line."""
        text = generated.text.splitlines()

        def moved(location: Optional[Location]) -> Tuple[Optional[Location], Optional[str]]:
            if location is None or self._site is None or os.path.abspath(location.file) != str(msc):
                return location, None
            segment = generated.origin(location.line, location.column)
            path, part = (segment.path, segment.part) if segment else ((), "key")
            line = text[location.line - 1] if 0 < location.line <= len(text) else None
            return self._location(path, part), line

        location, line = moved(diagnostic.location)
        notes = [Note(n.message, moved(n.location)[0], [FixIt(moved(f.location)[0], f.replacement) for f in n.fixits])
                 for n in diagnostic.notes]
        fixits = [FixIt(moved(f.location)[0], f.replacement) for f in diagnostic.fixits]
        return Diagnostic(diagnostic.code, diagnostic.severity, diagnostic.message, location, notes, fixits, line)

    # -- the generated contract --------------------------------------------------------------

    def _generate(self) -> gen.Generated:
        name = self.name
        if name is None:
            raise self._usage("ERR_PY_010", "the contract has no name: give name=... or decorate a function",
                              path=())
        schema = _schema()
        known = list(gen.SECTION_KEYWORDS) + list(gen.OPTION_KEYWORDS) + list(schema.get("contract", {}))
        for key in self._compute:
            if key not in schema.get("contract", {}):
                raise self._usage("ERR_PY_001", key, "@mscale_contract", path=(key,), notes=gen.did_you_mean(key, known))
        origin = ""
        if self._site is not None:
            span = self._site.locate(())
            origin = " in %s:%d" % (os.path.basename(self._site.file), span.line)
        try:
            return gen.generate(name, self._profile, self._compute, self._sections, schema, origin)
        except gen.SpecProblem as problem:
            raise self._from_problem(problem) from None

    def source(self) -> str:
        """The contract text the decorator generates (``ERR_PY_010`` for a ``file=`` contract)."""
        if self._file is not None:
            raise self._usage("ERR_PY_010", "a file= contract has no generated source", path=("file",))
        return self._generate().text

    def _file_path(self) -> pathlib.Path:
        path = pathlib.Path(os.fspath(self._file))  # type: ignore[arg-type]
        if not path.is_absolute() and self._site is not None:
            # Like an import: next to the Python file that names it, else from the working directory.
            beside = pathlib.Path(self._site.file).resolve().parent / path
            if beside.exists():
                return beside
        return path

    # -- checking ----------------------------------------------------------------------------

    def check(self, topology: Optional[PathLike] = None) -> CheckResult:
        """Compiles the contract for ``topology`` (default: the decorator's, ``"live"``) once per
        process and returns the result; prints the compiler's warnings on stderr the first time.

        Raises ``ContractError`` when the node cannot honour it (``ERR_PY_003``)."""
        topo = os.fspath(topology) if topology is not None else self.topology
        with self._lock:
            held = self._checked.get(topo)
            if held is not None and held[0] == os.getpid():
                return held[1]
            try:
                result = self._check_file(topo) if self._file is not None else self._check_generated(topo)
            except ContractError as error:
                error.located(self._location())
                raise
            self._checked[topo] = (os.getpid(), result)
        for warning in result.warnings:
            print(warning.render(), file=sys.stderr)
        return result

    def _check_generated(self, topology: str) -> CheckResult:
        generated = self._generate()
        name = self.name
        assert name is not None  # _generate refused a contract without one
        where = pathlib.Path(tempfile.mkdtemp(dir=_workdir(), prefix=name + "-"))
        msc = (where / (name + ".msc")).resolve()
        msc.write_text(generated.text, encoding="utf-8")
        plans = where / "plans"
        plans.mkdir()
        status, diagnostics, _ = _compile([str(msc)], topology, plans)
        mapped = [self._map(d, generated, msc) for d in diagnostics]
        _raise_if_refused(status, mapped, name, topology, self._location())
        return CheckResult(name, str(plans / (name + ".msp")), topology, str(msc), generated.text,
                           tuple(d for d in mapped if d.severity != "error"))

    def _check_file(self, topology: str) -> CheckResult:
        path = self._file_path()
        plans, warnings = _compile_file(path, topology, self._profile, self._location(("file",), "value"), self._name)
        name = self._name
        if name is None:
            if len(plans) != 1:
                raise self._usage("ERR_PY_010", "contract file '%s' holds %d contracts; choose one with name=..."
                                  % (path, len(plans)), path=("file",), notes=_holds(plans))
            name = next(iter(plans))
        elif name not in plans:
            raise ContractError("ERR_PY_007", name, path, notes=_holds(plans),
                                location=self._location(("name",), "value"), contract=name)
        return CheckResult(name, plans[name], topology, str(path), None, tuple(warnings))

    # -- what a call does --------------------------------------------------------------------

    def enforce(self) -> CheckResult:
        """What calling the decorated function does first, once per process: ``check()``, then
        under ``mscale-exec`` compare with the running plan, with an agent socket submit the plan,
        otherwise say once on stderr that the contract was only checked."""
        with self._lock:
            if self._enforced is not None and self._enforced[0] == os.getpid():
                return self._enforced[1]
            result = self.check()
            running = os.environ.get(RUNNING_PLAN_ENV)
            socket = self.agent_socket or os.environ.get(AGENT_SOCKET_ENV)
            try:
                if running:
                    self._compare(result, running)
                elif socket:
                    contract_id = self._submit(result, socket)
            except ContractError as error:
                error.located(self._location())
                raise
            if running:
                result = dataclasses.replace(result, mode="exec")
                print("mscale: contract '%s' is the plan mscale-exec runs ('%s')" % (result.contract, running),
                      file=sys.stderr)
            elif socket:
                result = dataclasses.replace(result, mode="agent", contract_id=contract_id)
                print("mscale: contract '%s' submitted to the agent at '%s' as '%s'"
                      % (result.contract, socket, contract_id), file=sys.stderr)
            else:
                print("mscale: contract '%s' checked against %s; not enforced (no mscale-exec, no agent)"
                      % (result.contract, _where(result.topology)), file=sys.stderr)
            self._enforced = (os.getpid(), result)
            return result

    def _compare(self, result: CheckResult, running: str) -> None:
        done = tools.run_tool([find_tool("mscale-plan"), "diff", running, result.plan])
        if done.returncode not in (0, 1):
            raise self._error("ERR_PY_009", "mscale-plan diff", "exit status %d" % done.returncode,
                              notes=tools.coded_lines(done.stderr)[-10:])
        ignored = set(_PROVENANCE_OF_SOURCE)
        if self._name is None and self._file is None:
            # The name came from the function; the executor's contract may be named otherwise.
            ignored.add("provenance.contract")
        differences = []
        for line in done.stdout.splitlines():
            m = re.match(r"^[~+-] ([^\s:]+)", line)
            if m and m.group(1) not in ignored:
                differences.append(line.strip())
        if differences:
            shown = differences[:20]
            if len(differences) > len(shown):
                shown.append("... and %d more (mscale-plan diff shows them all)" % (len(differences) - len(shown)))
            raise self._error("ERR_PY_005", running, result.contract, len(differences),
                              notes=["running -> described: " + d for d in shown])

    def _submit(self, result: CheckResult, socket: str) -> str:
        done = tools.run_tool(submit_command(find_tool("mscale-cli"), socket, result.plan))
        m = re.search(r"^contract (\S+)", done.stdout, re.M)
        if done.returncode != 0 or not m:
            raise self._error("ERR_PY_008", socket, result.contract,
                              notes=tools.coded_lines(done.stderr)[-10:] or ["exit status %d" % done.returncode])
        return m.group(1)


def submit_command(mscale_cli: str, socket: str, plan: str) -> List[str]:
    """The command that submits ``plan`` to the agent at ``socket`` (no worker command: the process
    that calls the decorated function is the job)."""
    return [mscale_cli, "contract", "submit", "--socket=" + socket, plan]


def mscale_contract(_function: Optional[Callable[..., Any]] = None, /, *,
                    compute_profile: Optional[str] = None,
                    io_topology: Optional[Mapping[str, Mapping[str, Any]]] = None,
                    fault_tolerance: Optional[Mapping[str, Any]] = None,
                    scaling: Optional[Mapping[str, Any]] = None,
                    policy: Optional[Mapping[str, Any]] = None,
                    name: Optional[str] = None,
                    file: Optional[PathLike] = None,
                    topology: PathLike = "live",
                    agent_socket: Optional[PathLike] = None,
                    **fields: Any) -> Contract:
    """Declares the contract of a training function; see the module's docstring.

    ``compute_profile``: a profile of the stdlib (``"mlvm-heavy"`` or ``"mlvm_heavy"``) or one the
    compiler finds. ``io_topology``: role name -> fields; ``fault_tolerance``, ``scaling``, ``policy``:
    fields; other keywords: the contract's own fields (``cpu_cores=4``, ``gpu_sm_slices=3``).
    ``name``: the contract's name (default: the function's). ``file``: an existing ``.msc`` instead
    of the sections (with ``name`` to choose one of its contracts). ``topology``: ``"live"`` or a
    topology file or directory. ``agent_socket``: submit to this agent (default
    ``$MSCALE_AGENT_SOCKET``)."""
    site = gen.locate_call(sys._getframe(1))

    def usage(code: str, *args: object, path: gen.KeyPath, part: str = "key") -> ContractUsageError:
        span = site.locate(path, part)
        return ContractUsageError(code, *args, location=Location(site.file, span.line, span.column, span.end_column),
                                  contract=name if isinstance(name, str) else None)

    if _function is not None:
        raise usage("ERR_PY_010", "write @mscale_contract(...) with its arguments, not bare @mscale_contract",
                    path=())
    sections = {"io_topology": io_topology, "fault_tolerance": fault_tolerance, "scaling": scaling, "policy": policy}
    given = [k for k, v in list(sections.items()) + [(k, True) for k in fields] if v is not None]
    if file is not None and given:
        raise usage("ERR_PY_010", "file= names an existing contract; '%s' cannot be added to it" % given[0],
                    path=(given[0],))
    if name is not None and not (isinstance(name, str) and gen.is_identifier(name)):
        raise usage("ERR_PY_002", "name", "a contract name (%s)" % gen.EXPECTED["identifier"], gen.got(name),
                    path=("name",), part="value")
    profile = None
    if compute_profile is not None:
        # The language's names use '_'; 'mlvm-heavy' is how people write them. Whether the profile
        # exists is the compiler's to say (with its own did-you-mean).
        if not isinstance(compute_profile, str) or not gen.is_identifier(compute_profile.replace("-", "_")):
            raise usage("ERR_PY_002", "compute_profile", gen.EXPECTED["profile"], gen.got(compute_profile),
                        path=("compute_profile",), part="value")
        profile = compute_profile.replace("-", "_")
    for key, value in (("file", file), ("topology", topology), ("agent_socket", agent_socket)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise usage("ERR_PY_002", key, "a str or path", gen.got(value), path=(key,), part="value")
    return Contract(site, profile=profile, compute=fields,
                    sections={k: v for k, v in sections.items() if v is not None}, name=name, file=file,
                    topology=os.fspath(topology), agent_socket=agent_socket)
