"""Unit tests of allot-lab record's recorder, without torch: its settings, names, whole files, rank
claims, step schedule and failure handling, with a fake torch that logs what it is asked.

    python3 -m unittest discover -s apps/lab/python/tests     (src/record/python.test.ts runs it)
"""

import atexit
import io
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bootstrap"))

import allot_lab_record as recorder  # noqa: E402
import allot_lab_record_files as files  # noqa: E402


def folder():
    """A new temporary folder, removed when the tests end."""
    path = tempfile.mkdtemp(prefix="allot-record-test-")
    atexit.register(shutil.rmtree, path, True)
    return path


class SettingsTest(unittest.TestCase):
    def test_off_without_the_folder(self):
        self.assertIsNone(files.settings_from({}))
        self.assertIsNone(files.settings_from({files.ENV_DIR: ""}))

    def test_defaults_and_values(self):
        plain = files.settings_from({files.ENV_DIR: "out"})
        self.assertEqual(plain.folder, os.path.abspath("out"))
        self.assertEqual(
            (plain.max_entries, plain.every_steps, plain.every_seconds, plain.stacks, plain.status),
            (100000, None, None, "python", None),
        )
        given = files.settings_from(
            {
                files.ENV_DIR: "/job/out",
                files.ENV_STATUS: "/tmp/status",
                files.ENV_MAX_ENTRIES: "5000",
                files.ENV_EVERY_STEPS: "10",
                files.ENV_EVERY_SECONDS: "2.5",
                files.ENV_STACKS: "all",
            }
        )
        self.assertEqual(
            (given.max_entries, given.every_steps, given.every_seconds, given.stacks, given.status),
            (5000, 10, 2.5, "all", "/tmp/status"),
        )
        zero = files.settings_from(
            {files.ENV_DIR: "o", files.ENV_EVERY_STEPS: "0", files.ENV_EVERY_SECONDS: "0"}
        )
        self.assertEqual((zero.every_steps, zero.every_seconds), (None, None))

    def test_a_bad_value_is_named(self):
        for name, value in [
            (files.ENV_MAX_ENTRIES, "0"),
            (files.ENV_MAX_ENTRIES, "ten"),
            (files.ENV_EVERY_STEPS, "-1"),
            (files.ENV_EVERY_SECONDS, "soon"),
            (files.ENV_EVERY_SECONDS, "inf"),
            (files.ENV_EVERY_SECONDS, "nan"),
            (files.ENV_STACKS, "cpp"),
        ]:
            with self.assertRaisesRegex(files.SettingsError, name):
                files.settings_from({files.ENV_DIR: "o", name: value})


class NamesTest(unittest.TestCase):
    def test_names_say_rank_step_and_why(self):
        self.assertEqual(files.snapshot_name(3, 120, "step"), "rank3_step120.pickle")
        self.assertEqual(files.snapshot_name(0, 7, "exit"), "rank0_step7_exit.pickle")
        self.assertEqual(files.snapshot_name(1, 8847, "oom"), "rank1_step8847_oom.pickle")
        # After an elastic restart the steps count from 0 again: the names say which start.
        self.assertEqual(files.snapshot_name(1, 5, "step", 0), "rank1_step5.pickle")
        self.assertEqual(files.snapshot_name(1, 5, "step", 2), "rank1_restart2_step5.pickle")
        self.assertEqual(files.snapshot_name(0, 9, "oom", 1), "rank0_restart1_step9_oom.pickle")
        self.assertEqual(files.restart_from({"TORCHELASTIC_RESTART_COUNT": "3"}), 3)
        self.assertEqual(files.restart_from({"TORCHELASTIC_RESTART_COUNT": "x"}), 0)
        self.assertEqual(files.restart_from({}), 0)
        self.assertEqual(files.sidecar_name("rank1_step8847_oom.pickle"), "rank1_step8847_oom.json")
        self.assertEqual(files.rank_from({"RANK": "7"}), 7)
        self.assertIsNone(files.rank_from({}))
        self.assertIsNone(files.rank_from({"RANK": "x"}))


class WriteWholeTest(unittest.TestCase):
    def test_the_file_appears_whole_under_its_name(self):
        out = folder()
        seen = []

        def write(file):
            seen.append((os.path.exists(os.path.join(out, "a.pickle")), sorted(os.listdir(out))))
            file.write(b"snapshot")

        files.write_whole(out, "a.pickle", write)
        self.assertEqual(seen, [(False, ["a.pickle.%d.tmp" % os.getpid()])])
        self.assertEqual(os.listdir(out), ["a.pickle"])
        with open(os.path.join(out, "a.pickle"), "rb") as file:
            self.assertEqual(file.read(), b"snapshot")

    def test_a_failed_write_leaves_the_folder_as_it_was(self):
        out = folder()
        files.write_json_whole(out, "a.json", {"step": 1})

        def fail(file):
            file.write(b"half")
            raise OSError(28, "No space left on device")

        with self.assertRaises(OSError):
            files.write_whole(out, "a.json", fail)
        self.assertEqual(os.listdir(out), ["a.json"])
        with open(os.path.join(out, "a.json"), encoding="utf-8") as file:
            self.assertEqual(file.read(), '{"step": 1}\n')


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class ClaimTest(unittest.TestCase):
    def test_one_live_process_per_rank(self):
        status = folder()
        me, parent = os.getpid(), os.getppid()
        self.assertEqual(files.claim_rank(None, None, me), 0)
        self.assertEqual(files.claim_rank(None, 5, me), 5)
        self.assertEqual(files.claim_rank(status, 2, me), 2)
        self.assertEqual(files.claim_rank(status, 2, me), 2)
        # A second process of rank 2 (a data loader worker that initializes CUDA) records nothing.
        self.assertIsNone(files.claim_rank(status, 2, parent))
        # Without RANK, the lowest rank no live process holds.
        self.assertEqual(files.claim_rank(status, None, parent), 0)
        self.assertEqual(files.claim_rank(status, None, me), 1)
        self.assertEqual(sorted(os.listdir(status)), ["rank0.claim", "rank1.claim", "rank2.claim"])

    def test_a_rank_whose_process_died_is_taken_over(self):
        status = folder()
        self.assertEqual(files.claim_rank(status, 4, dead_pid()), 4)
        self.assertEqual(files.claim_rank(status, 4, os.getpid()), 4)
        with open(os.path.join(status, "rank4.claim"), encoding="ascii") as file:
            self.assertEqual(file.read(), str(os.getpid()))


class Optimizer:
    """An optimizer as the step hook sees one."""


class FakeTorch:
    """What the recorder uses of torch, logging each call; `modules()` installs it as `torch`."""

    def __init__(self, cuda=True, context=True):
        self.calls = []
        self.queued = []
        self.initialized = False
        self.context = context
        self.hooks = []
        self.fail_snapshot = False
        self.__version__ = "9.9.0"
        self.version = types.SimpleNamespace(cuda="12.4" if cuda else None, hip=None)
        log = self.calls.append
        self.cuda = types.SimpleNamespace(
            is_initialized=lambda: self.initialized,
            _lazy_call=self.queued.append,
            current_device=lambda: 0,
            memory_stats=lambda device: {"reserved_bytes.all.current": 2**21},
            mem_get_info=lambda device: log(("mem_get_info", device)) or (1, 2),
            memory=types.SimpleNamespace(
                _record_memory_history=lambda **kwargs: log(("history", kwargs)),
                _snapshot=self._snapshot,
            ),
        )
        self._C = types.SimpleNamespace(
            _cuda_attach_out_of_memory_observer=lambda observer: log(("observer", observer)),
            _cuda_hasPrimaryContext=lambda device: self.context,
        )

    def _snapshot(self):
        self.calls.append(("snapshot",))
        if self.fail_snapshot:
            raise RuntimeError("the allocator said no")
        return {"segments": [], "device_traces": [[]]}

    def modules(self):
        optimizer = types.ModuleType("torch.optim.optimizer")
        optimizer.register_optimizer_step_post_hook = self.hooks.append
        optim = types.ModuleType("torch.optim")
        optim.optimizer = optimizer
        torch = types.ModuleType("torch")
        torch.optim = optim
        return {"torch": torch, "torch.optim": optim, "torch.optim.optimizer": optimizer}

    def initialize(self):
        for call in self.queued:
            call()
        self.initialized = True


class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.saved = {name: sys.modules.get(name) for name in FakeTorch().modules()}

    def tearDown(self):
        for name, module in self.saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

    def recorder(self, torch, environ=None, **settings):
        sys.modules.update(torch.modules())
        values = {files.ENV_DIR: folder(), files.ENV_STATUS: folder()}
        values.update(settings)
        self.stderr = io.StringIO()
        made = recorder.Recorder(files.settings_from(values), environ or {}, self.stderr)
        made.on_torch(torch)
        return made

    def status(self, made):
        with open(
            os.path.join(made.settings.status, "%d.jsonl" % os.getpid()), encoding="utf-8"
        ) as file:
            return [line for line in file.read().splitlines()]

    def test_inert_without_cuda_and_says_so_once(self):
        torch = FakeTorch(cuda=False)
        made = self.recorder(torch)
        self.assertEqual(made.state, "no-cuda")
        self.assertEqual(torch.calls, [])
        self.assertEqual(torch.queued, [])
        self.assertRegex(
            self.stderr.getvalue(),
            r"^allot-lab record: torch 9\.9\.0 has no CUDA \(a CPU build\): nothing is recorded "
            r"in this process \(pid \d+\)\n$",
        )
        self.assertIn('"event": "no-cuda"', self.status(made)[-1])

    def test_records_from_the_programs_cuda_initialization_on(self):
        torch = FakeTorch()
        made = self.recorder(
            torch, {"RANK": "2"}, **{files.ENV_MAX_ENTRIES: "64", files.ENV_STACKS: "none"}
        )
        self.assertEqual((made.state, torch.calls, len(torch.queued)), ("waiting-cuda", [], 1))
        torch.initialize()
        self.assertEqual(made.state, "recording")
        self.assertEqual(made.rank, 2)
        self.assertEqual(
            torch.calls[0],
            ("history", {"enabled": "all", "context": None, "stacks": "python", "max_entries": 64}),
        )
        self.assertEqual(torch.calls[1][0], "observer")

    def test_steps_are_counted_per_optimizer_and_dumped_on_schedule(self):
        torch = FakeTorch()
        made = self.recorder(torch, **{files.ENV_EVERY_STEPS: "2"})
        torch.initialize()
        step = torch.hooks[0]
        first, second = Optimizer(), Optimizer()
        for _ in range(5):
            step(first, (), {})
            step(second, (), {})
        self.assertEqual(made.step, 5)
        self.assertEqual(
            sorted(os.listdir(made.settings.folder)),
            ["rank0_step2.json", "rank0_step2.pickle", "rank0_step4.json", "rank0_step4.pickle"],
        )
        made._on_oom(0, 2**30, 2**34, 2**20)
        self.assertIn("rank0_step5_oom.pickle", os.listdir(made.settings.folder))

    def test_a_rank_started_again_writes_beside_what_its_first_process_wrote(self):
        torch = FakeTorch()
        made = self.recorder(
            torch, {"TORCHELASTIC_RESTART_COUNT": "1"}, **{files.ENV_EVERY_STEPS: "2"}
        )
        torch.initialize()
        optimizer = Optimizer()
        for _ in range(2):
            torch.hooks[0](optimizer, (), {})
        self.assertEqual(
            sorted(os.listdir(made.settings.folder)),
            ["rank0_restart1_step2.json", "rank0_restart1_step2.pickle"],
        )

    def test_due_every_n_steps_or_s_seconds(self):
        made = self.recorder(FakeTorch(), **{files.ENV_EVERY_SECONDS: "10"})
        made._last_dump = 100.0
        self.assertFalse(made.due(109.9))
        self.assertTrue(made.due(110.0))
        steps = self.recorder(FakeTorch(), **{files.ENV_EVERY_STEPS: "3"})
        steps.step = 2
        self.assertFalse(steps.due(0.0))
        steps.step = 3
        self.assertTrue(steps.due(0.0))

    def test_no_context_is_made_for_the_device_figures(self):
        torch = FakeTorch(context=False)
        made = self.recorder(torch)
        torch.initialize()
        facts = made.facts("rank0_step0.pickle", "exit", None)
        self.assertEqual((facts["deviceFreeBytes"], facts["deviceTotalBytes"]), (None, None))
        self.assertNotIn("mem_get_info", [call[0] for call in torch.calls])
        self.assertEqual(facts["reservedBytes"], 2**21)

    def test_an_error_of_its_own_stops_recording_and_is_said_once(self):
        torch = FakeTorch()
        made = self.recorder(torch, **{files.ENV_EVERY_STEPS: "1"})
        torch.initialize()
        torch.fail_snapshot = True
        optimizer = Optimizer()
        torch.hooks[0](optimizer, (), {})
        self.assertEqual(made.state, "stopped")
        self.assertEqual(torch.calls[-1], ("history", {"enabled": None}))
        torch.hooks[0](optimizer, (), {})
        made._on_oom(0, 1, 2, 3)
        made._on_exit()
        self.assertEqual([call[0] for call in torch.calls].count("snapshot"), 1)
        lines = self.stderr.getvalue().splitlines()
        self.assertEqual(len(lines), 1)
        self.assertRegex(lines[0], r"recorder stopped .* RuntimeError: the allocator said no$")
        self.assertEqual(os.listdir(made.settings.folder), [])

    def test_a_second_process_of_a_rank_records_nothing(self):
        torch = FakeTorch()
        made = self.recorder(torch, {"RANK": "1"})
        files.claim_rank(made.settings.status, 1, os.getppid())
        torch.initialize()
        self.assertEqual(made.state, "skipped")
        self.assertEqual(torch.calls, [])

    def test_a_forked_child_writes_nothing(self):
        torch = FakeTorch()
        made = self.recorder(torch)
        torch.initialize()
        made.pid += 1
        made._on_oom(0, 1, 2, 3)
        made._on_exit()
        torch.hooks[0](Optimizer(), (), {})
        self.assertEqual(os.listdir(made.settings.folder), [])


class ImportHookTest(unittest.TestCase):
    def test_called_once_torch_has_run_never_importing_it(self):
        saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "torch"}
        for name in saved:
            del sys.modules[name]
        place = folder()
        os.mkdir(os.path.join(place, "torch"))
        with open(os.path.join(place, "torch", "__init__.py"), "w", encoding="utf-8") as file:
            file.write("import json\nDONE = True\n")
        seen = []
        hook = recorder._TorchImportHook(lambda module: seen.append(module.DONE))
        sys.meta_path.insert(0, hook)
        sys.path.insert(0, place)
        try:
            import json  # noqa: F401 - another module does not call the hook

            self.assertEqual(seen, [])
            import torch

            self.assertEqual(seen, [True])
            self.assertNotIn(hook, sys.meta_path)
            self.assertEqual(type(torch.__loader__).__name__, "SourceFileLoader")
            self.assertIs(torch.__spec__.loader, torch.__loader__)
        finally:
            sys.path.remove(place)
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
            for name in [name for name in sys.modules if name.split(".")[0] == "torch"]:
                del sys.modules[name]
            sys.modules.update(saved)

    def test_activate_does_nothing_without_records_environment(self):
        before = list(sys.meta_path)
        self.assertIsNone(recorder.activate({}))
        self.assertEqual(sys.meta_path, before)


if __name__ == "__main__":
    unittest.main()
