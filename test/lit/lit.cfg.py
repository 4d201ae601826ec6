# lit configuration for the MegaScale-Omni regression suite.
import os
import shutil
import subprocess

import lit.formats

config.name = "MegaScale-Omni"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".msc", ".test", ".yaml"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.msc_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.msc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for var in ("HOME", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# The tools' content cache (support/ContentCache.h) would carry state from one test (or run) to the
# next: off here; test/lit/hal/content-cache.test turns it on in a directory of its own.
config.environment["MSCALE_NO_CACHE"] = "1"
# The suite's own node ledger (executor/claims/NodeClaims.h): its runs and agents are judged against
# each other, not against an agent of the machine's or a quickstart running beside the suite.
config.environment["MSCALE_CLAIMS_DIR"] = os.path.join(config.msc_obj_root, "test", "lit", "claims")
# Sanitized builds: leak checks stay on, but a report must fail the test, not scroll by.
config.environment.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")

config.substitutions.append(("%fixtures", config.msc_fixtures_dir))
config.substitutions.append(("%stdlib", os.path.join(config.msc_src_root, "stdlib")))
config.substitutions.append(("%examples", os.path.join(config.msc_src_root, "examples")))
config.substitutions.append(("%obj_root", config.msc_obj_root))
config.substitutions.append(("%python", shutil.which("python3") or "python3"))
# The mscale Python package runs on Debian's interpreter (python3-torch lives there, not in a
# python3 that PATH may put first), importable from the source tree.
config.substitutions.append(
    ("%mscale_python", "env PYTHONPATH=" + os.path.join(config.msc_src_root, "python") +
     " MSCALE_BIN=" + os.path.join(config.msc_obj_root, "bin") + " /usr/bin/python3"))

# Tests that change machine-wide state (hugepage reservations, cgroups) run one at a time; their
# directories' lit.local.cfg put them in this group.
lit_config.parallelism_groups["machine-state"] = 1

# Features that gate tests needing what some machines lack. A skipped test says why in lit -v.
if os.geteuid() == 0:
    config.available_features.add("root")
if os.path.exists("/sys/kernel/btf/vmlinux"):
    config.available_features.add("btf")
if os.path.isdir(config.msc_fixtures_dir):
    config.available_features.add("fixtures")
if config.msc_sanitized:
    config.available_features.add("asan")
