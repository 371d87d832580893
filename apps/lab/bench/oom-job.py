"""A small training job in which one rank runs out of memory, for `record-torchrun.sh`.

    torchrun --standalone --nproc-per-node 2 apps/lab/bench/oom-job.py \
        [--steps 40] [--oom-rank 1] [--fraction 0.05] [--step-seconds 0.2]

Every rank trains its own transformer encoder (4 layers, width 1,024, AdamW, bf16 autocast) on
its GPU (the device of its local rank, modulo the devices there are: two ranks may share one).
The ranks meet once, in a gloo barrier, as a job's ranks do before they train.

The rank --oom-rank first limits itself with `torch.cuda.set_per_process_memory_fraction`, then
lengthens its sequences by 128 tokens a step, from 384, until an allocation fails; the error reaches the
program as it would in any job, and torchrun ends the other rank. Every other rank trains at 512
tokens for --steps steps. Each step sleeps --step-seconds, so that a recorder that dumps every few
steps writes its files while the job runs.

Standard library and PyTorch only. Needs a CUDA GPU.
"""

import argparse
import os
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--oom-rank", type=int, default=1)
    parser.add_argument("--fraction", type=float, default=0.05)
    parser.add_argument("--step-seconds", type=float, default=0.2)
    args = parser.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    if world > 1:
        import datetime

        import torch.distributed as dist

        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        dist.barrier()

    failing = rank == args.oom_rank
    if failing:
        torch.cuda.set_per_process_memory_fraction(args.fraction, device)
    torch.manual_seed(rank)
    layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, device=device)
    model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    steps = 10_000 if failing else args.steps
    for step in range(steps):
        length = 256 + 128 * (step + 1) if failing else 512
        x = torch.randn(8, length, 1024, device=device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize(device)
        print(
            "rank %d step %d: %d tokens, %.0f MiB reserved"
            % (rank, step + 1, length, torch.cuda.memory_reserved(device) / 2**20),
            flush=True,
        )
        time.sleep(args.step_seconds)


if __name__ == "__main__":
    main()
