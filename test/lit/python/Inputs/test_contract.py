"""Unit tests of mscale.contract: the values the decorator takes, the generated source, the mapping of
the compiler's diagnostics to the decorator's arguments, the per-process cache and the three modes.
The compiler is the project's mscalec; the node is the recorded JURECA-DC one ($CONTRACT_FIXTURES)."""

import contextlib
import io
import os
import pathlib
import stat
import subprocess
import tempfile
import unittest
from unittest import mock

from mscale import _contract_tools
from mscale.contract import (CheckResult, ContractError, ContractUsageError, check_file, find_tool,
                             mscale_contract, submit_command)
from mscale.errors import MScaleError, UsageError

JURECA = os.path.join(os.environ["CONTRACT_FIXTURES"], "hwloc-xml", "psmgmt-jrc0323-jurecadc-gpu-4xA100.xml")
INPUTS = pathlib.Path(__file__).resolve().parent
GPU0 = {"gpu": "0000:03:00.0", "sm_slices": 1}
LOADER = {"cpu_cores": range(48, 52), "numa_node": 3}
CLEAN = {k: v for k, v in os.environ.items() if k not in ("MSCALE_PLAN", "MSCALE_AGENT_SOCKET", "MSCALE_CONTRACT")}


def dump(plan):
    return subprocess.run([find_tool("mscale-plan"), "dump", plan], check=True, capture_output=True, text=True).stdout


def line_of(text):
    """The line of this file that holds ``text`` (where a diagnostic must point)."""
    for number, line in enumerate(pathlib.Path(__file__).read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(text)


class Values(unittest.TestCase):
    """The value forms of the contract language, written the Python way."""

    def test_both_profile_spellings_name_the_stdlib_profile(self):
        for spelling in ("mlvm-heavy", "mlvm_heavy"):
            with self.subTest(spelling=spelling):
                c = mscale_contract(compute_profile=spelling, io_topology={"patch_embed": GPU0}, topology=JURECA,
                                    name="spelled")
                self.assertIn("contract spelled uses profile mlvm_heavy {", c.source())
                self.assertIn('import "profiles/models.msc";', c.source())
                self.assertIn("profile    mlvm_heavy (mlvm_heavy <- mlvm_base)", dump(c.check().plan))

    def test_an_unknown_profile_is_the_compilers_to_refuse(self):
        c = mscale_contract(compute_profile="mlvm-haevy", topology=JURECA, name="typo")
        with self.assertRaises(ContractError) as caught:
            c.check()
        self.assertEqual(caught.exception.code, "ERR_PY_003")
        self.assertEqual([d.code for d in caught.exception.diagnostics], ["ERR_SEM_002"])
        d = caught.exception.diagnostics[0]
        self.assertEqual((d.location.file, d.location.line), (__file__, line_of('compute_profile="mlvm-haevy"')))
        self.assertEqual(d.notes[0].fixits[0].replacement, "mlvm_heavy")

    def test_recovery_point_forms(self):
        for value, text in (("step_128", "every(128 steps)"), (128, "every(128 steps)"),
                            ("128 steps", "every(128 steps)"), ("10min", "every(10min)"),
                            ("every(64 steps)", "every(64 steps)")):
            with self.subTest(value=value):
                c = mscale_contract(fault_tolerance={"recovery_point": value}, name="cadence", topology=JURECA)
                self.assertIn("    recovery_point = %s;\n" % text, c.source())
        c = mscale_contract(io_topology={"patch_embed": GPU0}, fault_tolerance={"recovery_point": "step_128"},
                            name="cadence", topology=JURECA)
        self.assertIn("snapshot every 128 steps", dump(c.check().plan))

    def test_hugepage_pools(self):
        c = mscale_contract(io_topology={"cache": {"memory_pool": "hugepage_2MB", "memory_pool_count": 1024},
                                         "big": {"memory_pool": "hugepage_1GB", "memory_pool_count": 16},
                                         "raw": {"memory_pool": "hugepages(2MiB, count = 8)"}},
                            name="pools", topology=JURECA)
        source = c.source()
        self.assertIn("memory_pool = hugepages(2MiB, count = 1024);", source)
        self.assertIn("memory_pool = hugepages(1GiB, count = 16);", source)
        self.assertIn("memory_pool = hugepages(2MiB, count = 8);", source)
        plan = dump(c.check().plan)
        self.assertIn("cache: 1024 x 2MiB hugepages", plan)
        self.assertIn("big: 16 x 1GiB hugepages", plan)

    def test_a_pool_without_its_count_is_refused_at_the_key(self):
        c = mscale_contract(io_topology={"cache": {"memory_pool": "hugepage_2MB"}}, name="nocount", topology=JURECA)
        with self.assertRaises(ContractError) as caught:
            c.check()
        d = caught.exception.diagnostics[0]
        self.assertEqual(d.code, "ERR_SEM_013")
        self.assertEqual(d.location.line, line_of('{"cache": {"memory_pool": "hugepage_2MB"}}, name="nocount"'))
        self.assertEqual(d.generated_line.strip(), "memory_pool = hugepages(2MiB);")

    def test_cpu_lists(self):
        for value, text in ((range(48, 52), "[48..51]"), ("48-51,56", "[48..51, 56]"), ("0..3, 8", "[0..3, 8]"),
                            ([48, 49, range(50, 52)], "[48, 49, 50..51]"), ({3, 1}, "[1, 3]"),
                            (range(0, 8, 2), "[0, 2, 4, 6]")):
            with self.subTest(value=value):
                c = mscale_contract(io_topology={"loader": {"cpu_cores": value}}, name="cpus")
                self.assertIn("cpu_cores = %s;" % text, c.source())

    def test_scalars(self):
        c = mscale_contract(io_topology={"g": {"gpu": "0000:03:00.0"}, "i": {"gpu": 1}, "u": {"gpu": "GPU-1f2e"},
                                         "r": {"rdma_port": "mlx5_0:1", "pcie_domain": "0000:81", "gds": True}},
                            scaling={"scale_up_below": 70, "hysteresis": 2.5, "density_deviation": "12.5%",
                                     "window": "10s"},
                            fault_tolerance={"snapshot_dir": 'C:\\x "y"'},
                            policy={"affinity_policy": "numa_first", "cross_domain_io": False},
                            precision=["bf16", "fp8"], target_density=2.4, gpu_memory="40GiB", name="scalars")
        source = c.source()
        for text in ("gpu = 0000:03:00.0;", "gpu = 1;", 'gpu = "GPU-1f2e";', 'rdma_port = "mlx5_0:1";',
                     'pcie_domain = "0000:81";', "gds = true;", "scale_up_below = 70C;", "hysteresis = 2.5C;",
                     "density_deviation = 12.5%;", "window = 10s;", 'snapshot_dir = "C:\\\\x \\"y\\"";',
                     "affinity_policy = numa_first;", "cross_domain_io = false;", "precision = [bf16, fp8];",
                     "target_density = 2.4;", "gpu_memory = 40GiB;"):
            self.assertIn(text, source)

    def test_elastic_world_size_and_global_batch(self):
        for value, text in ((4, "4"), ((2, 4), "2..4"), ([2, 4], "2..4"), ("2..4", "2..4"), (" 2 .. 4 ", "2..4")):
            with self.subTest(value=value):
                c = mscale_contract(nodes=value, name="elastic")
                self.assertIn("  nodes = %s;\n" % text, c.source())
        for value, text in ((256, "256 samples"), ("256 samples", "256 samples"), ("8  sample", "8 sample")):
            with self.subTest(value=value):
                c = mscale_contract(global_batch=value, name="batch")
                self.assertIn("  global_batch = %s;\n" % text, c.source())
        # A range no size of which splits the global batch is the compiler's to refuse, at the argument.
        c = mscale_contract(io_topology={"patch_embed": GPU0}, nodes=(3, 3), global_batch=256, name="odd",
                            topology=JURECA)
        with self.assertRaises(ContractError) as caught:
            c.check()
        self.assertEqual([d.code for d in caught.exception.diagnostics], ["ERR_SEM_025"])
        self.assertEqual(caught.exception.diagnostics[0].location.line, line_of('nodes=(3, 3), global_batch=256'))

    def test_the_source_is_deterministic_and_readable(self):
        def make():
            return mscale_contract(compute_profile="mlvm_light", io_topology={"loader": LOADER}, name="same")
        self.assertEqual(make().source(), make().source())
        self.assertEqual(make().source().splitlines()[3:], [
            "contract same uses profile mlvm_light {", "  io_topology {", "    loader {",
            "      cpu_cores = [48..51];", "      numa_node = 3;", "    }", "  }", "}"])


class Errors(unittest.TestCase):
    def test_unknown_keys_have_a_did_you_mean(self):
        c = mscale_contract(io_topology={"loader": {"numa_nod": 3}}, name="typo")
        with self.assertRaises(ContractUsageError) as caught:
            c.source()
        e = caught.exception
        self.assertEqual((e.code, e.notes), ("ERR_PY_001", ["did you mean 'numa_node'?"]))
        self.assertIn("unknown key 'numa_nod' in 'io_topology.loader'", str(e))
        self.assertEqual(e.location.line, line_of('{"loader": {"numa_nod": 3}}, name="typo"'))
        c = mscale_contract(fault_tolerence={}, name="typo")
        with self.assertRaises(ContractUsageError) as caught:
            c.source()
        self.assertEqual(caught.exception.notes, ["did you mean 'fault_tolerance'?"])

    def test_wrong_types_name_the_key_path_and_what_it_takes(self):
        for kwargs, message in (
                ({"fault_tolerance": {"heartbeat": 200}},
                 "'fault_tolerance.heartbeat' must be a duration such as '200ms', got int 200"),
                ({"io_topology": {"loader": {"cpu_cores": {"a": 1}}}}, "'io_topology.loader.cpu_cores' must be a list"),
                ({"io_topology": {"loader": [1]}}, "'io_topology.loader' must be a dict of field names"),
                ({"fault_tolerance": {"stateful_io": "yes"}}, "'fault_tolerance.stateful_io' must be a bool"),
                ({"nodes": (1, 2, 3)}, "'nodes' must be an int, or a range of ints: (MIN, MAX) or a str such as '2..4'"),
                ({"global_batch": "256"}, "'global_batch' must be an int number of samples"),
                ({"io_topology": {"c": {"memory_pool": "hugepage_2MB", "memory_pool_count": "8"}}},
                 "'io_topology.c.memory_pool_count' must be an int")):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(ContractUsageError) as caught:
                    mscale_contract(name="typed", **kwargs).source()
                self.assertEqual(caught.exception.code, "ERR_PY_002")
                self.assertIn(message, str(caught.exception))
                self.assertIsInstance(caught.exception, (TypeError, UsageError, ContractError, MScaleError))

    def test_arguments_that_do_not_go_together(self):
        with self.assertRaises(ContractUsageError) as caught:
            mscale_contract(file="x.msc", io_topology={})
        self.assertEqual(caught.exception.code, "ERR_PY_010")
        with self.assertRaises(ContractUsageError) as caught:
            mscale_contract(lambda: None)
        self.assertIn("not bare @mscale_contract", str(caught.exception))
        with self.assertRaises(ContractUsageError) as caught:
            mscale_contract(io_topology={"c": {"memory_pool_count": 8}}, name="x").source()
        self.assertEqual(caught.exception.code, "ERR_PY_010")
        with self.assertRaises(ContractUsageError) as caught:
            mscale_contract(name="two words")
        self.assertEqual(caught.exception.code, "ERR_PY_002")

    def test_refusals_point_at_the_argument(self):
        c = mscale_contract(compute_profile="mlvm_light", io_topology={
            "loader": {"cpu_cores": [2, 3], "numa_node": 3}}, name="far", topology=JURECA)
        with self.assertRaises(ContractError) as caught:
            c.check()
        e = caught.exception
        self.assertEqual(e.code, "ERR_PY_003")
        self.assertEqual(e.contract, "far")
        self.assertIn("ERR_HAL_CPU_006", [d.code for d in e.diagnostics])
        d = next(d for d in e.diagnostics if d.code == "ERR_HAL_CPU_006")
        self.assertEqual((d.location.file, d.location.line), (__file__, line_of('"loader": {"cpu_cores": [2, 3]')))
        self.assertEqual(d.notes[0].message, "numa_node declared here")
        self.assertEqual(d.notes[0].location.line, d.location.line)
        self.assertIn("error[ERR_HAL_CPU_006]", str(e))

    def test_file_form(self):
        msc = str(INPUTS / "contract_jureca.msc")
        self.assertEqual(mscale_contract(file=msc, name="qwen_vl", topology=JURECA).check().contract, "qwen_vl")
        with self.assertRaises(ContractUsageError) as caught:
            mscale_contract(file=msc, topology=JURECA).check()
        self.assertIn("holds 2 contracts", str(caught.exception))
        with self.assertRaises(ContractError) as caught:
            mscale_contract(file=msc, name="nope", topology=JURECA).check()
        self.assertEqual(caught.exception.code, "ERR_PY_007")
        self.assertEqual([r.contract for r in check_file(msc, topology=JURECA)], ["near_loader", "qwen_vl"])


class Modes(unittest.TestCase):
    def setUp(self):
        self.contract = mscale_contract(compute_profile="mlvm-heavy", io_topology={"image_loader": LOADER,
                                                                                  "patch_embed": GPU0},
                                        topology=JURECA)
        self.calls = []

        @self.contract
        def train(x):
            self.calls.append(x)
            return x * 2

        self.train = train

    def run_quiet(self, *args):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            results = [self.train(a) for a in args]
        return results, stderr.getvalue()

    def test_check_only_says_so_once(self):
        with mock.patch.dict(os.environ, CLEAN, clear=True):
            results, stderr = self.run_quiet(1, 2)
        self.assertEqual((results, self.calls), ([2, 4], [1, 2]))
        self.assertEqual(stderr.count("not enforced (no mscale-exec, no agent)"), 1)
        self.assertEqual(self.contract.enforce().mode, "check")

    def test_compiles_once_per_process(self):
        runs = []
        real = _contract_tools.run_tool
        with mock.patch.object(_contract_tools, "run_tool", lambda argv, **kw: runs.append(argv) or real(argv, **kw)):
            first = self.train.check()
            self.assertIs(self.train.check(), first)
        self.assertEqual(sum(1 for argv in runs if "--emit=plan" in argv), 1)
        self.assertIsInstance(first, CheckResult)
        self.assertEqual((first.contract, first.topology), ("train", JURECA))

    def test_under_mscale_exec_the_running_plan_must_be_the_described_one(self):
        same = check_file(INPUTS / "contract_jureca.msc", topology=JURECA, name="qwen_vl")[0].plan
        env = dict(CLEAN, MSCALE_PLAN=same, MSCALE_CONTRACT="qwen_vl")
        contract = mscale_contract(compute_profile="mlvm-heavy", io_topology={
            "image_loader": dict(LOADER, threads=4, io_depth=128), "patch_embed": GPU0,
            "rdma_cache": {"memory_pool": "hugepage_2MB", "memory_pool_count": 1024}},
            fault_tolerance={"recovery_point": "step_128", "heartbeat": "200ms", "stateful_io": True},
            scaling={"density_deviation": "15%", "scale_up_below": 70, "throttle_at": "75C"},
            policy={"affinity_policy": "numa_first"}, topology=JURECA)

        @contract
        def train():
            pass

        with mock.patch.dict(os.environ, env, clear=True):
            self.assertEqual(contract.enforce().mode, "exec")
            with self.assertRaises(ContractError) as caught:
                self.train(1)
        self.assertEqual(caught.exception.code, "ERR_PY_005")
        self.assertIn("~ io_bindings[image_loader].io_uring_depth: 128 -> 0", "\n".join(caught.exception.notes))
        self.assertEqual(self.calls, [])

    def test_with_an_agent_the_plan_is_submitted(self):
        self.assertEqual(submit_command("/bin/mscale-cli", "/run/a.sock", "/tmp/p.msp"),
                         ["/bin/mscale-cli", "contract", "submit", "--socket=/run/a.sock", "/tmp/p.msp"])
        with tempfile.TemporaryDirectory() as bin_dir:
            # The real compiler and a stand-in mscale-cli that records its arguments and answers as
            # the real one does; the agent itself is exercised by contract-agent.test (as root).
            for tool in ("mscalec", "mscale-plan"):
                os.symlink(find_tool(tool), os.path.join(bin_dir, tool))
            log = os.path.join(bin_dir, "args")
            cli = pathlib.Path(bin_dir, "mscale-cli")
            cli.write_text("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\necho 'contract train'\necho 'applied yes'\n" % log)
            cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
            env = dict(CLEAN, MSCALE_BIN=bin_dir, MSCALE_AGENT_SOCKET=os.path.join(bin_dir, "agent.sock"))
            with mock.patch.dict(os.environ, env, clear=True):
                results, stderr = self.run_quiet(1)
                result = self.contract.enforce()
            args = pathlib.Path(log).read_text().split()
        self.assertEqual((result.mode, result.contract_id), ("agent", "train"))
        self.assertEqual(args[:3], ["contract", "submit", "--socket=" + os.path.join(bin_dir, "agent.sock")])
        self.assertTrue(args[3].endswith("train.msp"))
        self.assertIn("submitted to the agent at", stderr)

    def test_a_missing_tool_is_a_coded_error(self):
        with tempfile.TemporaryDirectory() as empty, mock.patch.dict(os.environ, dict(CLEAN, MSCALE_BIN=empty)):
            with self.assertRaises(ContractError) as caught:
                self.train.check()
        self.assertEqual(caught.exception.code, "ERR_PY_004")
        self.assertEqual(caught.exception.location.line, line_of('self.contract = mscale_contract(compute_profile='))


if __name__ == "__main__":
    unittest.main()
