#!/usr/bin/env bash
# `allot-lab record` and `watch` on a real job, on a CUDA machine: a torchrun job of 2 processes
# (oom-job.py), one limited by set_per_process_memory_fraction until it runs out of memory,
# recorded by `allot-lab record`, while two `allot-lab watch` follow its folder (one --json, one
# for the terminal) and a poller notes when each file appears. Then `replay` reads the folder, and
# record-torchrun-check.mjs says what held: the files of both ranks during the run, the post-mortem
# naming the size PyTorch's error names at the cap PyTorch hit, watch's peaks against replay's and
# PyTorch's own.
#
#   bash apps/lab/bench/record-torchrun.sh OUT [oom-job.py options]
#
# Needs node (the built lab), python3 with torch and a CUDA GPU. Everything lands in OUT: the
# snapshots (OUT/snapshots), the job's output (job.log), watch's (watch.jsonl, watch.txt), the
# poller's (seen.log), replay's (replay.json) and the verdict (check.json). Exits 0 when every
# check held.
set -u
out=${1:?usage: record-torchrun.sh OUT [oom-job.py options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
lab=(node "$here/../bin/allot-lab.js")
dir=$out/snapshots
mkdir -p "$out" && rm -rf "$dir" && mkdir -p "$dir"
# One machine (--standalone): the ranks' gloo barrier goes over the loopback interface.
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo}
if command -v torchrun >/dev/null; then launcher=(torchrun); else launcher=(python3 -m torch.distributed.run); fi

"${lab[@]}" watch "$dir" --json --interval 0.5 >"$out/watch.jsonl" 2>"$out/watch.err" &
json_watch=$!
"${lab[@]}" watch "$dir" --interval 0.5 >"$out/watch.txt" 2>&1 &
text_watch=$!
(
  seen=" "
  while :; do
    for path in "$dir"/*; do
      name=${path##*/}
      case $name in *.pickle | *.json) ;; *) continue ;; esac
      case $seen in *" $name "*) continue ;; esac
      seen="$seen$name "
      echo "$(date +%s.%N) $name"
    done
    sleep 0.1
  done
) >"$out/seen.log" &
poller=$!

started=$(date +%s.%N)
"${lab[@]}" record --out "$dir" --every-steps 5 -- \
  "${launcher[@]}" --standalone --nproc-per-node 2 "$here/oom-job.py" "$@" >"$out/job.log" 2>&1
status=$?
ended=$(date +%s.%N)
rows_during_run=$(wc -l <"$out/watch.jsonl")
sleep 3 # the watchers' last look at the folder (every 0.5 s), with time to replay what it found
kill "$json_watch" "$text_watch" "$poller" 2>/dev/null
wait 2>/dev/null

"${lab[@]}" replay "$dir" --json >"$out/replay.json" 2>"$out/replay.err"
node "$here/record-torchrun-check.mjs" "$out" "$started" "$ended" "$status" "$rows_during_run"
