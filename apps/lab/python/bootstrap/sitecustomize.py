"""`allot-lab record` puts this folder first on PYTHONPATH, so every Python process of the recorded
job (torchrun's workers too) runs this file at startup, as `ddtrace-run` and
`opentelemetry-instrument` do.

    record's environment set? ─ yes ─► allot_lab_record.activate() (inert until torch and CUDA)
    then, always ─► the sitecustomize that would have run without record (the next one on
                    sys.path), run as Python's site module would run it, errors and all

Without record's environment it does nothing but hand over to that next sitecustomize.
"""

import os
import sys


def _activate():
    try:
        import allot_lab_record

        allot_lab_record.activate()
    except Exception as error:  # noqa: BLE001 - the program must go on
        try:
            sys.stderr.write("allot-lab record: the recorder could not start: %s\n" % error)
        except Exception:  # noqa: BLE001
            pass


def _next_sitecustomize():
    """Runs the next `sitecustomize` on sys.path after this folder, and makes it the module."""
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    after = places.index(here) + 1 if here in places else 0
    rest = [entry for entry, place in zip(sys.path[after:], places[after:]) if place != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("ALLOT_LAB_RECORD_DIR"):
    _activate()
_next_sitecustomize()
