"""`allot-lab record`'s recorder, loaded by its sitecustomize in every Python process of the job.

It waits, doing nothing, until the program imports torch, and then until the program itself
initializes CUDA; only then does it record the caching allocator's history and dump snapshots.

    sitecustomize ─► activate(): record's environment set? ─ no ─► nothing at all
                       │ yes
                       ▼
    the program imports torch ─► a post-import hook (torch is never imported for it)
                       │   torch without CUDA ─► one stderr line, a status record; inert
                       ▼
    torch.cuda._lazy_call(start): runs when the program initializes CUDA itself
                       │   start: claim the rank, _record_memory_history(max_entries, stacks),
                       │          attach the out-of-memory observer, chain SIGTERM
                       ▼
    optimizer steps (the global step post-hook) ─► every N steps / S seconds ─► rankR_stepS
    out-of-memory observer (before the error reaches the program) ─► rankR_stepS_oom
    atexit, SIGTERM (then the previous handler, or the default action again) ─► rankR_stepS_exit

Why wait for the program's own CUDA initialization: `_record_memory_history` and
`_cuda_attach_out_of_memory_observer` initialize PyTorch's CUDA state first (cuInit, the device
count, the allocators: `lazyInitDevice` in torch/csrc), though they create no CUDA context; done at
import, they would initialize CUDA in processes that never use it (torchrun's agent, launchers,
CPU-only helpers) and forbid them to fork CUDA workers. Nothing is lost by waiting: no CUDA memory
is allocated before that initialization. The queued call runs inside `_lazy_init`, before any
`set_device`, so it touches no device (no context is created on device 0).

Any error in here is caught, said once on stderr, and stops recording in this process; the
program goes on. Standard library and PyTorch only.
"""

import atexit
import os
import sys
import threading
import time

import allot_lab_record_files as files

#: The one recorder of this process (None until activate() finds record's environment).
_recorder = None


class _TorchImportHook:
    """A meta path finder that calls `after(torch)` once `import torch` has run torch's code."""

    def __init__(self, after):
        self._after = after
        self._searching = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._searching:
            return None
        self._searching = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AfterLoader(spec.loader, self)
        return spec

    def loaded(self, module):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        self._after(module)


class _AfterLoader:
    """Runs the real loader, gives the module its real loader back, then calls the hook."""

    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return None if create is None else create(spec)

    def exec_module(self, module):
        try:
            module.__loader__ = self._loader
            module.__spec__.loader = self._loader
        except AttributeError:
            pass
        self._loader.exec_module(module)
        self._hook.loaded(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class Recorder:
    """The recorder of one process (see the module's comment for its states)."""

    def __init__(self, settings, environ=None, stderr=None):
        self.settings = settings
        self.pid = os.getpid()
        #: "waiting-torch", "waiting-cuda", "recording", "no-cuda", "skipped" or "stopped".
        self.state = "waiting-torch"
        #: Optimizer steps taken so far (the most of any one optimizer's).
        self.step = 0
        self.rank = None
        self._environ = os.environ if environ is None else environ
        self._stderr = stderr
        self._status = files.Status(settings.status, self.pid)
        self._torch = None
        self._steps = None
        self._step_hook = None
        self._lock = threading.Lock()
        self._said = False
        self._last_dump = 0.0
        self._exit_step = None
        self._previous_sigterm = None
        self._sigterm_installed = False
        self._status.write("loaded")

    # Torch ----------------------------------------------------------------------------------

    def on_torch(self, torch):
        """After `import torch`: wait for CUDA, or stay inert without it."""
        if self.state != "waiting-torch":
            return
        try:
            self._torch = torch
            version = str(getattr(torch, "__version__", "?"))
            self._status.write("torch", version=version)
            torch_version = getattr(torch, "version", None)
            has_cuda = getattr(torch_version, "cuda", None) or getattr(torch_version, "hip", None)
            if not has_cuda:
                self.state = "no-cuda"
                self._status.write("no-cuda", version=version)
                self._say(
                    "torch %s has no CUDA (a CPU build): nothing is recorded in this process (pid %d)"
                    % (version, self.pid)
                )
                return
            self.state = "waiting-cuda"
            import weakref

            from torch.optim.optimizer import register_optimizer_step_post_hook

            self._steps = weakref.WeakKeyDictionary()
            self._step_hook = register_optimizer_step_post_hook(self._on_step)
            atexit.register(self._on_exit)
            lazy_call = getattr(torch.cuda, "_lazy_call", None)
            if lazy_call is not None:
                lazy_call(self.start)
            # Without it, recording starts at the first optimizer step after CUDA is initialized.
        except Exception as error:  # noqa: BLE001 - the program must go on
            self._fail(error)

    def start(self):
        """Starts recording: run by torch's CUDA initialization (or at the first step after it)."""
        if self.state != "waiting-cuda" or os.getpid() != self.pid:
            return
        try:
            torch = self._torch
            rank = files.claim_rank(
                self.settings.status, files.rank_from(self._environ), self.pid
            )
            if rank is None:
                self.state = "skipped"
                self._status.write("skipped", rank=files.rank_from(self._environ))
                return
            self.rank = rank
            history = torch.cuda.memory._record_memory_history
            if self.settings.stacks == "none":
                history(
                    enabled="all",
                    context=None,
                    stacks="python",
                    max_entries=self.settings.max_entries,
                )
            else:
                history(
                    enabled="all",
                    context="all",
                    stacks=self.settings.stacks,
                    max_entries=self.settings.max_entries,
                )
            self.state = "recording"
            torch._C._cuda_attach_out_of_memory_observer(self._on_oom)
            self._last_dump = time.monotonic()
            self._status.write(
                "recording",
                rank=rank,
                maxEntries=self.settings.max_entries,
                stacks=self.settings.stacks,
            )
            self._chain_sigterm()
        except Exception as error:  # noqa: BLE001
            self._fail(error)

    # Events ---------------------------------------------------------------------------------

    def _on_step(self, optimizer, args, kwargs):
        if os.getpid() != self.pid or self.state in ("stopped", "skipped"):
            return
        try:
            try:
                count = self._steps.get(optimizer, 0) + 1
                self._steps[optimizer] = count
            except TypeError:  # an optimizer that cannot be weakly referenced: one count for all
                count = self.step + 1
            if count <= self.step:
                return
            self.step = count
            if self.state == "waiting-cuda" and self._torch.cuda.is_initialized():
                self.start()
            if self.state != "recording":
                return
            if not self._sigterm_installed:
                self._chain_sigterm()
            if self.due(time.monotonic()):
                self.dump("step")
        except Exception as error:  # noqa: BLE001
            self._fail(error)

    def due(self, now):
        """Whether the step just taken is one to dump at (every N steps, or S seconds on)."""
        every_steps = self.settings.every_steps
        every_seconds = self.settings.every_seconds
        if every_steps is not None and self.step % every_steps == 0:
            return True
        return every_seconds is not None and now - self._last_dump >= every_seconds

    def _on_oom(self, device, allocation, limit, free):
        """PyTorch's out-of-memory observer: runs before the error is raised to the program.

        `allocation` is what PyTorch tried to allocate, the size its error message names (the
        request rounded up to a segment); `limit` the device's total memory, or its per-process
        fraction's share; `free` the device's free memory as cudaMemGetInfo gave it.
        """
        if os.getpid() != self.pid or self.state != "recording":
            return
        self.dump(
            "oom",
            oom={
                "device": device,
                "allocationBytes": allocation,
                "limitBytes": limit,
                "deviceFreeBytes": free,
            },
        )

    def _on_exit(self):
        if os.getpid() != self.pid:
            return
        if self.state == "recording":
            if self._exit_step != self.step:
                self.dump("exit")
        elif self.state == "waiting-cuda":
            try:
                seen = bool(self._torch.cuda.is_initialized())
            except Exception:  # noqa: BLE001
                seen = False
            self._status.write("cuda-unseen" if seen else "cuda-unused")

    def _chain_sigterm(self):
        """Dumps at SIGTERM, then hands the signal on: to the handler before, or its default."""
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers belong to the main thread: tried again at the next step
        import signal

        self._sigterm_installed = True
        previous = signal.getsignal(signal.SIGTERM)
        if previous is None:
            return  # a handler from C code, which cannot be chained: leave it alone
        self._previous_sigterm = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        import signal

        if os.getpid() == self.pid and self.state == "recording":
            self.dump("exit", wait=False)
        previous = self._previous_sigterm
        if callable(previous):
            return previous(signum, frame)
        if previous == signal.SIG_IGN:
            return None
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return None

    # Dumps ----------------------------------------------------------------------------------

    def dump(self, reason, oom=None, wait=True):
        """Writes this rank's snapshot and its sidecar now; never raises."""
        if not self._lock.acquire(wait):
            return None  # a dump is under way in this thread (a signal during a dump)
        try:
            name = files.snapshot_name(
                self.rank, self.step, reason, files.restart_from(self._environ)
            )
            snapshot = self._torch.cuda.memory._snapshot()
            files.write_json_whole(
                self.settings.folder, files.sidecar_name(name), self.facts(name, reason, oom)
            )
            import pickle

            files.write_whole(self.settings.folder, name, lambda file: pickle.dump(snapshot, file))
            self._last_dump = time.monotonic()
            if reason == "exit":
                self._exit_step = self.step
            self._status.write("dump", file=name, rank=self.rank, step=self.step, reason=reason)
            return name
        except Exception as error:  # noqa: BLE001
            self._fail(error)
            return None
        finally:
            self._lock.release()

    def facts(self, name, reason, oom):
        """The sidecar of a dump: what the snapshot itself does not say."""
        cuda = self._torch.cuda
        device = oom["device"] if oom is not None else cuda.current_device()
        stats = dict(cuda.memory_stats(device))
        free = total = None
        has_context = getattr(self._torch._C, "_cuda_hasPrimaryContext", None)
        # mem_get_info would create a context on a device the program never used.
        if has_context is not None and has_context(device):
            free, total = cuda.mem_get_info(device)
        # The cap PyTorch puts on the pool, which no snapshot states (PyTorch 2.9 on; 1.0: none).
        fraction = None
        get_fraction = getattr(cuda, "get_per_process_memory_fraction", None)
        if get_fraction is not None:
            try:
                fraction = float(get_fraction(device))
            except Exception:  # noqa: BLE001
                fraction = None
        conf = self._environ.get("PYTORCH_CUDA_ALLOC_CONF", self._environ.get("PYTORCH_ALLOC_CONF"))
        return {
            "format": files.SIDECAR_FORMAT,
            "version": files.SIDECAR_VERSION,
            "snapshot": name,
            "rank": self.rank,
            "step": self.step,
            "reason": reason,
            "pid": self.pid,
            "host": _host(),
            "time": time.time(),
            "torch": str(getattr(self._torch, "__version__", "?")),
            "device": device,
            "deviceTotalBytes": total,
            "deviceFreeBytes": free,
            "memoryFraction": fraction,
            "reservedBytes": stats.get("reserved_bytes.all.current"),
            "allocatedBytes": stats.get("allocated_bytes.all.current"),
            "peakReservedBytes": stats.get("reserved_bytes.all.peak"),
            "peakAllocatedBytes": stats.get("allocated_bytes.all.peak"),
            "inactiveSplitBytes": stats.get("inactive_split_bytes.all.current"),
            "memoryStats": stats,
            "allocConf": conf,
            "maxEntries": self.settings.max_entries,
            "stacks": self.settings.stacks,
            "oom": oom,
        }

    # Failure --------------------------------------------------------------------------------

    def _say(self, text):
        """The process's one line on stderr, at most."""
        if self._said:
            return
        self._said = True
        try:
            stream = self._stderr if self._stderr is not None else sys.stderr
            stream.write("allot-lab record: %s\n" % text)
            stream.flush()
        except Exception:  # noqa: BLE001
            pass

    def _fail(self, error):
        """Stops recording in this process after an error of the recorder's own."""
        was_recording = self.state == "recording"
        self.state = "stopped"
        message = "%s: %s" % (type(error).__name__, error)
        self._status.write("error", message=message)
        self._say(
            "the recorder stopped in this process (pid %d) and the program goes on: %s"
            % (self.pid, message)
        )
        # The step hook stays: removing it from inside a step would change the optimizer's loop;
        # it returns at once from now on.
        try:
            if was_recording:
                self._torch.cuda.memory._record_memory_history(enabled=None)
        except Exception:  # noqa: BLE001
            pass


def _host():
    import socket

    try:
        return socket.gethostname()
    except OSError:
        return None


def activate(environ=None):
    """Starts the recorder of this process when record's environment asks for it; never raises.

    Returns the recorder, or None when recording is off.
    """
    global _recorder
    environ = os.environ if environ is None else environ
    try:
        settings = files.settings_from(environ)
    except files.SettingsError as error:
        sys.stderr.write("allot-lab record: nothing is recorded in this process: %s\n" % error)
        return None
    if settings is None:
        return None
    recorder = Recorder(settings, environ)
    _recorder = recorder
    try:
        torch = sys.modules.get("torch")
        if torch is not None:
            recorder.on_torch(torch)
        else:
            sys.meta_path.insert(0, _TorchImportHook(recorder.on_torch))
    except Exception as error:  # noqa: BLE001
        recorder._fail(error)
    return recorder
