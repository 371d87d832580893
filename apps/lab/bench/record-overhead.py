"""What `allot-lab record`'s recorder costs the job it records.

    python3 apps/lab/bench/record-overhead.py startup  [--rounds 40]
    python3 apps/lab/bench/record-overhead.py training [--rounds 2] [--steps 60] [--every-steps 20]

startup: the CPU time of a Python process that does nothing (`python3 -c pass`), without the
  recorder and with it (its folder first on PYTHONPATH and record's environment set, as
  `allot-lab record` runs every process of a job), alternated, rounds of 10 processes each; every
  process of a job pays it once. Runs anywhere: it needs neither torch nor a GPU.

training: the step time of a small training loop on a CUDA GPU (a transformer encoder, AdamW,
  bf16 autocast, sequence lengths that vary from step to step so the caching allocator keeps
  splitting and caching blocks), in fresh processes, alternately without the recorder and with it
  (Python stacks, a snapshot every --every-steps steps, the 100,000-event ring buffer), each round
  in the order A B B A. Printed per run: the median step time (the cost of recording each
  allocation) and the mean (which carries the dumps too), and the ratios of the recorder's runs
  to the plain ones. Needs torch with CUDA and a GPU.

The figures are ratios measured in the same run, on the same machine; BENCHMARKS.md says where
they were taken.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BOOTSTRAP = os.path.join(HERE, "..", "python", "bootstrap")


def recorder_environment(folder, status, every_steps):
    """The environment `allot-lab record` gives the command (src/record/settings.ts)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (BOOTSTRAP, env.get("PYTHONPATH", "")) if p)
    env.update(
        {
            "ALLOT_LAB_RECORD_DIR": folder,
            "ALLOT_LAB_RECORD_STATUS": status,
            "ALLOT_LAB_RECORD_MAX_ENTRIES": "100000",
            "ALLOT_LAB_RECORD_EVERY_STEPS": str(every_steps),
            "ALLOT_LAB_RECORD_EVERY_SECONDS": "0",
            "ALLOT_LAB_RECORD_STACKS": "python",
        }
    )
    return env


def child_cpu_seconds(command, env):
    """CPU seconds (user + system) of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(rounds):
    folder = tempfile.mkdtemp(prefix="record-overhead-")
    plain_env = dict(os.environ)
    with_env = recorder_environment(folder, tempfile.mkdtemp(prefix="record-status-"), 0)
    command = [sys.executable, "-c", "pass"]
    plain, recorded = [], []
    for round_ in range(rounds):
        runs = [(plain, plain_env), (recorded, with_env)]
        for samples, env in runs if round_ % 2 == 0 else reversed(runs):
            samples.append(sum(child_cpu_seconds(command, env) for _ in range(10)) / 10)
    a, b = statistics.median(plain), statistics.median(recorded)
    print(
        json.dumps(
            {
                "python": sys.version.split()[0],
                "rounds": rounds,
                "plainMs": round(a * 1e3, 2),
                "withRecorderMs": round(b * 1e3, 2),
                "extraMs": round((b - a) * 1e3, 2),
                "ratio": round(b / a, 3),
            }
        )
    )


def train(steps, warmup):
    """The training loop (run in a child): prints its step times as JSON."""
    import torch

    torch.cuda.set_device(0)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, device="cuda")
    model = torch.nn.TransformerEncoder(layer, 8, enable_nested_tensor=False)
    head = torch.nn.Linear(1024, 1024, device="cuda")
    optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-4)
    lengths = torch.randint(128, 1024, (steps + warmup,), generator=torch.Generator().manual_seed(1))
    times = []
    for step in range(steps + warmup):
        torch.cuda.synchronize()
        started = time.perf_counter()
        x = torch.randn(16, int(lengths[step]), 1024, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = head(model(x)).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= warmup:
            times.append(time.perf_counter() - started)
    print(json.dumps({"steps": times}))


def training(rounds, steps, every_steps):
    plain, recorded = [], []
    for round_ in range(rounds):
        for with_recorder in (False, True, True, False):
            folder = tempfile.mkdtemp(prefix="record-overhead-")
            env = (
                recorder_environment(folder, tempfile.mkdtemp(prefix="record-status-"), every_steps)
                if with_recorder
                else dict(os.environ)
            )
            command = [sys.executable, os.path.abspath(__file__), "--child", "--steps", str(steps)]
            output = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
            times = json.loads(output.stdout.strip().splitlines()[-1])["steps"]
            dumps = len([n for n in os.listdir(folder) if n.endswith(".pickle")])
            run = {
                "round": round_,
                "recorder": with_recorder,
                "medianMs": statistics.median(times) * 1e3,
                "meanMs": statistics.mean(times) * 1e3,
                "dumps": dumps,
            }
            print(json.dumps(run), flush=True)
            (recorded if with_recorder else plain).append(run)

    def ratio(key):
        return statistics.median(r[key] for r in recorded) / statistics.median(r[key] for r in plain)

    print(
        json.dumps(
            {
                "steps": steps,
                "everySteps": every_steps,
                "medianStepRatio": round(ratio("medianMs"), 4),
                "meanStepRatio": round(ratio("meanMs"), 4),
            }
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=["startup", "training"], default="startup")
    parser.add_argument("--rounds", type=int)
    # A step of the training loop takes about 0.2 s on an H100: 8 processes of 80 steps, about 4 min.
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every-steps", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        train(args.steps, warmup=20)
    elif args.what == "training":
        training(args.rounds or 2, args.steps, args.every_steps)
    else:
        startup(args.rounds or 40)


if __name__ == "__main__":
    main()
