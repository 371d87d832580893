"""What `allot-lab record`'s recorder writes, and how: its settings, its file names, files that
appear whole, and the status records `allot-lab record` reads at the end.

    record's environment ─► Settings (checked; a bad value stops recording, never the program)
    a dump ─► OUT/rankR_stepS[_exit|_oom].json   (facts: device memory, memory_stats(), settings)
          ─► OUT/rankR_stepS[_exit|_oom].pickle  (torch.cuda.memory._snapshot(), pickled)
              each written as NAME.PID.tmp in OUT, then renamed: a reader sees whole files only
    each event ─► STATUS/PID.jsonl, one JSON object a line (loaded, torch, recording, dump, ...)

Standard library only: this module is imported in every Python process of the recorded job.
"""

import os

#: The environment variables `allot-lab record` sets (src/record/settings.ts names the same).
ENV_DIR = "ALLOT_LAB_RECORD_DIR"
ENV_STATUS = "ALLOT_LAB_RECORD_STATUS"
ENV_MAX_ENTRIES = "ALLOT_LAB_RECORD_MAX_ENTRIES"
ENV_EVERY_STEPS = "ALLOT_LAB_RECORD_EVERY_STEPS"
ENV_EVERY_SECONDS = "ALLOT_LAB_RECORD_EVERY_SECONDS"
ENV_STACKS = "ALLOT_LAB_RECORD_STACKS"

#: Allocator events kept per device when the environment names no number: PyTorch's ring buffer.
DEFAULT_MAX_ENTRIES = 100000
STACKS = ("python", "all", "none")
#: What a dump is for, and the mark its name carries.
REASONS = {"step": "", "exit": "_exit", "oom": "_oom"}
#: The sidecar's format and version (its fields are listed in the lab's README).
SIDECAR_FORMAT = "allot-lab-record"
SIDECAR_VERSION = 1


class SettingsError(ValueError):
    """A setting in the environment that the recorder cannot use."""


class Settings:
    """The recorder's settings, from `allot-lab record`'s environment."""

    def __init__(self, folder, status, max_entries, every_steps, every_seconds, stacks):
        #: The folder the snapshots go to (absolute).
        self.folder = folder
        #: The folder of the status records, or None.
        self.status = status
        #: Allocator events kept per device (the ring buffer of `_record_memory_history`).
        self.max_entries = max_entries
        #: A snapshot every this many optimizer steps, or None.
        self.every_steps = every_steps
        #: A snapshot at the first step boundary this many seconds after the last, or None.
        self.every_seconds = every_seconds
        #: "python", "all" (with C++ frames) or "none" (no stacks).
        self.stacks = stacks


def _whole(environ, name, default, least):
    text = environ.get(name, "").strip()
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise SettingsError("%s expects a whole number of at least %d, got %r" % (name, least, text))
    return value


def settings_from(environ):
    """The settings `environ` holds, or None when recording is off (no ALLOT_LAB_RECORD_DIR).

    Raises SettingsError for a value the recorder cannot use.
    """
    folder = environ.get(ENV_DIR, "")
    if folder == "":
        return None
    max_entries = _whole(environ, ENV_MAX_ENTRIES, DEFAULT_MAX_ENTRIES, 1)
    every_steps = _whole(environ, ENV_EVERY_STEPS, 0, 0) or None
    seconds_text = environ.get(ENV_EVERY_SECONDS, "").strip()
    every_seconds = None
    if seconds_text != "":
        try:
            every_seconds = float(seconds_text)
        except ValueError:
            every_seconds = -1.0
        if not every_seconds >= 0 or every_seconds == float("inf"):
            raise SettingsError(
                "%s expects a number of seconds, got %r" % (ENV_EVERY_SECONDS, seconds_text)
            )
        every_seconds = every_seconds or None
    stacks = environ.get(ENV_STACKS, "").strip() or "python"
    if stacks not in STACKS:
        raise SettingsError("%s expects one of %s, got %r" % (ENV_STACKS, ", ".join(STACKS), stacks))
    status = environ.get(ENV_STATUS, "") or None
    return Settings(os.path.abspath(folder), status, max_entries, every_steps, every_seconds, stacks)


def snapshot_name(rank, step, reason, restart=0):
    """`rankR_stepS.pickle`, `rankR_stepS_exit.pickle` or `rankR_stepS_oom.pickle`.

    A rank started again (`restart` > 0: torchrun's TORCHELASTIC_RESTART_COUNT after an elastic
    restart) counts its steps from 0 again: its names carry `_restartN` after the rank, so they never
    replace the files its earlier process wrote.
    """
    again = "_restart%d" % restart if restart > 0 else ""
    return "rank%d%s_step%d%s.pickle" % (rank, again, step, REASONS[reason])


def restart_from(environ):
    """How many times torchrun has started the job's workers again (TORCHELASTIC_RESTART_COUNT)."""
    text = environ.get("TORCHELASTIC_RESTART_COUNT", "").strip()
    return int(text) if text.isdigit() else 0


def sidecar_name(snapshot):
    """The sidecar's name beside a snapshot: the same stem, `.json`."""
    return snapshot[: -len(".pickle")] + ".json"


def write_whole(folder, name, write):
    """Writes `folder/name` through `write(file)` under a temporary name, then renames it.

    The temporary name is `name.PID.tmp` in the same folder, so the rename is atomic and a reader
    never sees a part of the file. On a failure the temporary file is removed and the error
    raised; `folder/name` is then as it was.
    """
    final = os.path.join(folder, name)
    temporary = "%s.%d.tmp" % (final, os.getpid())
    try:
        with open(temporary, "wb") as file:
            write(file)
        os.replace(temporary, final)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return final


def write_json_whole(folder, name, value):
    """`value` as JSON in `folder/name`, written whole (see write_whole)."""
    import json

    data = (json.dumps(value, sort_keys=True, default=str) + "\n").encode("utf-8")
    return write_whole(folder, name, lambda file: file.write(data))


class Status:
    """The status records of one process: STATUS/PID.jsonl, a JSON object a line, for record."""

    def __init__(self, folder, pid):
        self._path = None if folder is None else os.path.join(folder, "%d.jsonl" % pid)
        self._pid = pid

    def write(self, event, **fields):
        """Appends one record; a status folder that is gone or full is no reason to stop."""
        if self._path is None:
            return
        if fields:
            import json

            fields["event"] = event
            fields["pid"] = self._pid
            line = json.dumps(fields, sort_keys=True, default=str) + "\n"
        else:  # the record every process writes at startup, without importing json for it
            line = '{"event": "%s", "pid": %d}\n' % (event, self._pid)
        try:
            with open(self._path, "a", encoding="utf-8") as file:
                file.write(line)
        except OSError:
            pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _claim(folder, rank, pid):
    """Claims `rank` for `pid` in `folder`; False when a live process holds it.

    The claim is a file naming its holder, linked into place whole (`os.link` fails when the name
    exists), so two processes never both hold a rank.
    """
    path = os.path.join(folder, "rank%d.claim" % rank)
    mine = "%s.%d.tmp" % (path, pid)
    with open(mine, "w", encoding="ascii") as file:
        file.write(str(pid))
    try:
        os.link(mine, path)
        return True
    except FileExistsError:
        try:
            with open(path, encoding="ascii") as file:
                holder = int(file.read().strip())
        except (OSError, ValueError):
            return False
        if holder == pid:
            return True
        if _alive(holder):
            return False
        # The holder died (an elastic restart starts the rank anew): take the rank over.
        os.replace(mine, path)
        return True
    finally:
        try:
            os.unlink(mine)
        except OSError:
            pass


#: How many rank numbers a process without RANK tries before it gives up.
MAX_UNNAMED_RANKS = 4096


def claim_rank(folder, wanted, pid):
    """The rank this process records as, or None when another live process records it.

    `wanted` is the RANK environment variable's number, or None: then the lowest rank no live
    process holds. Without a status folder every process takes `wanted`, or 0.
    """
    if folder is None:
        return 0 if wanted is None else wanted
    if wanted is not None:
        return wanted if _claim(folder, wanted, pid) else None
    for rank in range(MAX_UNNAMED_RANKS):
        if _claim(folder, rank, pid):
            return rank
    return None


def rank_from(environ):
    """The global rank in `environ` (RANK, as torchrun sets it), or None."""
    text = environ.get("RANK", "").strip()
    return int(text) if text.isdigit() else None
