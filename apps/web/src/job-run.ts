/**
 * One setting for every rank of a job, in the engine worker: each rank's trace replayed under the
 * job's fixed list of settings (as `allot-lab tune DIR` does, one rank at a time), pausing between
 * replays so that the worker still answers the page, then the lab's pick over the worst rank.
 */
import {
  adviseJob,
  cardTooSmall,
  type FailedRankNote,
  failedRankText,
  type JobRankNote,
  jobAdviceText,
  jobCandidates,
  parseAllocConf,
  type RankSettings,
  runPool,
  searchDevice,
  segmentCalls,
  type Trace,
} from '@allot/lab/engine';
import { peakLiveBytes } from '@allot/workloads';
import type { FromEngine, JobRequest } from './protocol';

const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Runs `request` on `traces` (the engine's, by index), telling `post` of each rank and the advice. */
export async function runJob(
  request: JobRequest,
  traces: readonly Trace[],
  post: (message: FromEngine) => void,
  current: () => number,
): Promise<void> {
  const { knobs, seq } = request;
  const memory = knobs.memoryGiB === null ? undefined : Math.round(knobs.memoryGiB * 2 ** 30);
  const fraction = memory !== undefined && knobs.fraction !== null ? knobs.fraction : undefined;
  const candidates = jobCandidates(fraction !== undefined);
  const defaultsIndex = candidates.indexOf('');
  const ranks: RankSettings[] = [];
  const failed: FailedRankNote[] = [];
  const notes: JobRankNote[] = [];
  for (const { rank, trace: index } of request.ranks) {
    const trace = traces[index];
    if (trace === undefined) throw new Error(`rank ${rank}: no trace ${index}`);
    const { device } = searchDevice(trace, { memory, fraction });
    // As `tune DIR --memory` does: a rank the card cannot hold fails, and the others go on.
    const tooSmall = cardTooSmall(peakLiveBytes(trace), device, undefined, `rank ${rank}'s`);
    if (memory !== undefined && tooSmall !== null) {
      failed.push({ rank, message: tooSmall });
      continue;
    }
    const settings: RankSettings['settings'][number][] = [];
    for (const config of candidates) {
      await pause();
      if (current() !== seq) return; // a newer request took its place
      const run = runPool(trace, parseAllocConf(config), device);
      settings.push({
        config,
        peakReservedBytes: run.peakReservedBytes,
        failures: run.failures,
        segmentCalls: segmentCalls(run),
      });
      post({
        type: 'job-progress',
        seq,
        done: (ranks.length + failed.length) * candidates.length + settings.length,
        total: request.ranks.length * candidates.length,
      });
    }
    ranks.push({ rank, settings });
    notes.push({
      rank,
      defaultsFailures: settings[defaultsIndex]!.failures,
      died: (trace.recordedOoms?.length ?? 0) > 0,
    });
  }
  const advice = adviseJob(candidates, ranks);
  if (advice === null) {
    throw new Error(
      failed.length > 0
        ? `no rank could be replayed: ${failed.map(failedRankText).join('; ')}`
        : 'the job has no ranks',
    );
  }
  post({
    type: 'job-advised',
    seq,
    config: advice.config,
    text: jobAdviceText(advice, notes),
    candidates: candidates.length,
    ranks: ranks.length,
    failed,
  });
}
