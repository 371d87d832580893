#!/bin/bash
# Follow a running SLURM job's memory from the login node: one `allot-lab watch` reads every rank's
# snapshots as the nodes write them to the shared file system (polled: fs.watch is not told of
# files other machines write to NFS, Lustre or GPFS), and stops once the job has left the queue.
#
#   jid=$(sbatch --parsable train.sbatch)   # its ranks write their snapshots to /lustre/run/memory
#   watch-job.sh "$jid" /lustre/run/memory  # a row per rank as its files land; Ctrl-C stops early
#
# With PORT set it serves the job instead (allot-lab serve --watch), on the login node's loopback:
# reach it with `ssh -L 9400:localhost:9400 login-node`, then http://localhost:9400/metrics for
# Prometheus, /watch/updates for a page. INTERVAL (seconds, default 10) sets how often the folder
# and the queue are looked at. The folder is read as `allot-lab watch` reads any: the recorder's
# rankR_stepN.pickle, torchtitan's memory_snapshot/iteration_N/, verl's stepN/, Megatron's OOM dumps.
set -euo pipefail

JOBID=${1:?usage: watch-job.sh SLURM_JOB_ID SNAPSHOT_DIR}
SNAPSHOTS=${2:?usage: watch-job.sh SLURM_JOB_ID SNAPSHOT_DIR}
ALLOT_LAB=${ALLOT_LAB:-allot-lab} # or: npx --yes -p @allot/lab allot-lab
INTERVAL=${INTERVAL:-10}

# The folder appears when the first rank writes; wait for it while the job is queued or running.
queued() { [ -n "$(squeue -h -j "$JOBID" -o %i 2>/dev/null)" ]; }
while [ ! -d "$SNAPSHOTS" ] && queued; do sleep "$INTERVAL"; done
[ -d "$SNAPSHOTS" ] || { echo "watch-job.sh: job $JOBID wrote no $SNAPSHOTS" >&2; exit 2; }

# shellcheck disable=SC2086 # ALLOT_LAB may be a command with arguments
if [ -n "${PORT:-}" ]; then
  $ALLOT_LAB serve --watch "$SNAPSHOTS" --port "$PORT" --interval "$INTERVAL" &
else
  $ALLOT_LAB watch "$SNAPSHOTS" --interval "$INTERVAL" &
fi
WATCH=$!
trap 'kill -INT "$WATCH" 2>/dev/null || true' INT TERM
while queued && kill -0 "$WATCH" 2>/dev/null; do sleep "$INTERVAL"; done
# The job is over: two more looks at the folder for its last snapshots, then the table once more.
sleep "$INTERVAL"
sleep "$INTERVAL"
kill -INT "$WATCH" 2>/dev/null || true
wait "$WATCH"
