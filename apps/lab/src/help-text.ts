/**
 * The text of `allot-lab --help`: every command and option in one page (help.ts prints it, and a
 * topic's part of it for `allot-lab help COMMAND`).
 */
import { TRACE_FORMATS } from '@allot/workloads';
import { ALL_ROW_NAMES, ROW_NAMES } from './analysis/registry';
import { WORKLOAD_IDS } from './workloads';

/** The text of `allot-lab --help`. */
export const HELP = `allot-lab: replay allocation workloads and real traces through allot's allocators, side by side.

Usage
  allot-lab [options]                  built-in workloads: training loop, inference serving, larson churn
  allot-lab replay FILE... [options]   replay trace files (format detected from the content)
  allot-lab tune [FILE] [options]      search the caching pool's PYTORCH_CUDA_ALLOC_CONF for the lowest
                                       peak reserved memory (no FILE: the built-in training workload)
  allot-lab replay|tune DIR [options]  a job: one snapshot per rank in DIR (or a glob, or several
                                       files named by rank), one row per rank, one setting for all
  allot-lab merge RESULTS.json...      one job's answer from the --json outputs of its shards
  allot-lab oom FILE... [options]      the post-mortem of a recorded out-of-memory error: reproduced
                                       at the wall PyTorch hit, explained, and the settings that avoid it
  allot-lab capacity [FILE] [options]  per allocator, the smallest capacity without a failed allocation
  allot-lab serve [FILE...] [options]  the lab in a browser on this machine: drop a snapshot, change the
                                       settings, see the replay; FILEs open in the page; nothing is uploaded
  allot-lab record [options] -- CMD   run a PyTorch job's command unchanged (python train.py,
                                       torchrun ...) and dump each rank's snapshots into --out, at
                                       steps, at exit and at an out-of-memory error; then replay or
                                       tune that folder
  allot-lab watch DIR [options]        follow the folder a running job writes its snapshots to: a row per
                                       rank as its files land (what it holds, its peaks, the job's advice
                                       so far), and the post-mortem the moment a rank runs out of memory
  allot-lab list                       allocators and workloads
  allot-lab help                       this text

Options
  --allocators LIST  these rows, comma-separated (default: ${ROW_NAMES.join(', ')};
                     also ${ALL_ROW_NAMES.filter((name) => !ROW_NAMES.includes(name)).join(', ')})
  --workloads LIST   only these built-in workloads (default: all): ${WORKLOAD_IDS.join(', ')}
  --capacity SIZE    give every allocator SIZE bytes (80GiB, 512MiB, 1048576): ranges get a range of
                     SIZE, pools a source that refuses past SIZE. Without it,
                     ranges get 4 x peak live bytes and pools an unlimited source, so nothing fails
  --config CONF      replay: one more caching row with this PYTORCH_CUDA_ALLOC_CONF (repeatable);
                     a PyTorch snapshot always gets a row with its own recorded settings too
  --memory SIZE      the GPU's total memory (replay, tune, watch). PyTorch's cudaMalloc fails beyond it.
                     tune without it: the trace's figure if it records one, else 80GiB, stated
  --fraction F       the per-process memory fraction (torch.cuda.set_per_process_memory_fraction),
                     in (0, 1]: pools may reserve at most F x memory, and garbage_collection_threshold
                     acts only under a fraction, as in PyTorch (default: none)
  --format NAME      skip format detection: ${TRACE_FORMATS.join(', ')}
  --out DIR          where the report goes (default: lab-report, relative to the current folder);
                     record: where the snapshots go (default: memory-snapshots), a folder that
                     holds no snapshots yet
  --export LIST      run, replay: also write each allocator row's state at the peak of live bytes
                     under DIR/exports, comma-separated or repeated: memory-viz (a PyTorch snapshot
                     pickle that https://pytorch.org/memory_viz opens: segments at the peak and the
                     trace up to it), vma (a VMA JSON dump, for GpuMemDumpVis)
  --no-report        do not write DIR/index.html and DIR/results.json
  --json             print the results as JSON on stdout (progress stays on stderr)
  --seed N           seed of the built-in workloads (default 1)
  --quick            smaller built-in workloads (fewer steps, requests and operations)
  --quiet            no progress output
  --max-input SIZE   the input limit of each trace file: the most bytes read, and the most after
                     gunzip (default 16GiB for a pickled snapshot, which is read as a stream and
                     keeps only what the replay uses; 128MiB for other formats); the event limit
                     (8 M events per device of a pickled snapshot, 2 M otherwise) and the limits
                     on JSON values and on what a pickle holds scale with it. A file past a limit
                     exits 2
  --device LIST      profiler traces: the devices to replay, comma-separated: all, cuda, hip, cpu,
                     or names such as cuda:1 (default: the GPUs PyTorch's caching allocator
                     manages: CUDA, and HIP on ROCm)
  --jobs N           a job: ranks read and replayed at once, one worker thread each (default: the
                     machine's cores)
  --step N           a job: the snapshots of step N (default: the newest step the folder holds;
                     of record's names, each rank's newest)
  --shard I/N        a job: only the I-th of N equal shares of the ranks (I from 0), for one machine
                     of many; allot-lab merge joins their --json outputs
  --force            tune a job whose ranks were recorded with different settings as one
  --port N           serve: the port to listen on (default: a free one)
  --host ADDRESS     serve: the address to listen on (default: 127.0.0.1, this machine only)
  --every-steps N    record: a snapshot every N optimizer steps (0: none)
  --every-seconds S  record: a snapshot at the first optimizer step S seconds after the last (0:
                     none; default 300 when neither this nor --every-steps is given)
  --max-entries N    record: allocator events kept per device, the newest (default 100000)
  --stacks WHICH     record: the stacks kept with each event: python (default), all (with C++
                     frames) or none
  --watch DIR        serve: follow DIR as watch does, for the page and for Prometheus: the URL
                     printed opens the job's live page; /watch/updates (Server-Sent Events),
                     /watch/state (JSON), /metrics
  --once             watch: read the snapshots the folder holds, then exit (for scripts)
  --interval S       watch, serve --watch: seconds between two looks at the folder (default 2); it is
                     polled, as fs.watch is not told of files other machines write to a network file
                     system
  --debug            on a failure, print its stack trace too
  -V, --version      print the version
  -h, --help         this text

Trace formats (replay, tune, capacity; gzip-compressed files are read too)
  PyTorch memory snapshot  torch.cuda.memory._dump_snapshot() pickle, or its JSON form: device_traces
                           replayed per device (alloc, free_completed, streams); PyTorch's own segment
                           decisions are shown beside ours
  PyTorch profiler trace   Chrome trace JSON with [memory] events (profile_memory=True), per device,
                           in timestamp order; PyTorch's Total Reserved is shown beside ours
  RMM log                  logging_resource_adaptor CSV: Thread,Time,Action,Pointer,Size,Stream
  malloc trace             Alloc(n), / Free(k), lines (../shared/traces/malloc-real-programs)
  CSV                      op,id,size[,alignment] with op alloc or free

Figures
  peak reserved  ranges: the high-water mark (the capacity a range must offer); pools: bytes held
                 from the source. ratio = peak reserved / peak live bytes
  ext. frag      1 - largest free block / total free bytes, at the event of peak live bytes
  ns/event       median time per event over repeated replays (after a warm-up)

Exit status
  0  every allocation succeeded
  1  the run completed but allocations failed (an allocator ran out at this capacity)
  2  bad input, reported on one line naming the file and the line, event or byte offset: an unknown
     option or value; a file that is missing, unreadable, not a trace, malformed, truncated or
     damaged (gzip, pickle, JSON); a file past the input limits (--max-input); an --out that
     cannot be a folder; sizes no allocator can be given
  3  a bug in allot-lab (run again with --debug for the stack)
  record exits as its command did: the command's status, 128 + n when signal n ended it, 127
  when the command is not found, 126 when it cannot be run (2 and 3 as above, before it runs)

Limits (per trace file; --max-input lowers or raises them together)
  A pickled snapshot streams: 16 GiB read and after gunzip, 8 M events per device; memory follows
  what is kept (37 bytes an entry, each distinct frame and stack once), bounded by the pickle
  limits: 24 M values and 400 M memo entries held, strings of 64 MiB, nesting 1,000 deep in the
  segments and settings, integers of 1 KiB. Other files: 128 MiB read, and 128 MiB after gunzip;
  2 M events per trace; 2 M JSON objects and arrays. Within them reading a hostile file stays under
  about 1.5 GB of memory
`;
