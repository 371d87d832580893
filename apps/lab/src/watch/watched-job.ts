/**
 * A job as `allot-lab watch` knows it while it runs: per rank, its merged timeline, the memory
 * PyTorch held at its latest dump, and its replays; for the job, the one setting the tuner advises
 * from every rank so far; and the post-mortem of each rank that ran out of memory.
 *
 * ```
 *  a complete file ─► readDump ─► rank R's RankTimeline.add ─► an update: R's row
 *                  └─ a damaged one ─► an update naming it, and the watch goes on
 *  an OOM dump ─► its post-mortem (tracePostMortem, as `allot-lab oom FILE`) ─► an update with it;
 *                 and every candidate replayed at its wall, asking for its request, as a job's
 *                 rank that died is in `tune DIR`
 *  any update ─► adviseJob over the ranks' figures per candidate (job/advice.ts)
 * ```
 *
 * One rank's dumps are merged in the order they land; one older than the step already merged is
 * skipped with a line, as it cannot join the timeline.
 */
import { parseAllocConf } from '@allot/caching';
import type { Trace } from '@allot/workloads';
import { replayDevice, searchDevice } from '../analysis/device';
import type { OomFigures } from '../analysis/post-mortem';
import { withSidecar } from '../analysis/sidecar';
import { runPool, segmentCalls } from '../analysis/tune';
import { sidecarOf } from '../input';
import type { SettingFigures } from '../job/advice';
import { adviseJob, type JobAdvice } from '../job/advice';
import { jobCandidates } from '../job/candidates';
import { failureOf } from '../job/rank';
import { dumpOrder } from '../job/rank-name';
import { tracePostMortem } from '../oom-command';
import type { LiveRank, LiveTrendPoint } from '../ui/live-data';
import type { Dump } from './dump-entries';
import { type DumpStats, dumpStats } from './dump-stats';
import { type Joined, RankTimeline } from './rank-timeline';
import { readDump } from './read-dump';

/** A file the folder holds, complete, with what its name says. */
export interface FoundDump {
  readonly path: string;
  /** As shown: relative to the folder watched. */
  readonly file: string;
  readonly rank: number;
  readonly step: number | null;
  readonly oom: boolean;
  /** A dump at the process's exit. */
  readonly exit?: boolean;
  /** The rank's process was started again this many times before the one that wrote it. */
  readonly restart?: number;
  /** An OOM dump's step of the error, where its name says (`oomStepOf`). */
  readonly oomStep?: number | null;
}

/** One point of a rank's trend: a dump's step, the memory then, and the peaks so far. */
export type TrendPoint = LiveTrendPoint;

/** A rank's row: its latest dump, its timeline's figures, as the live page gets it but for its stats. */
export interface RankRow extends Omit<LiveRank, 'stats'> {
  /** `memory_stats()` at the latest dump (see dump-stats.ts). */
  readonly stats: DumpStats;
  /** Its out-of-memory dumps. */
  readonly ooms: number;
}

/** What changed when a file landed. */
export type WatchUpdate =
  | {
      readonly type: 'rank';
      readonly row: RankRow;
      readonly joined: Joined;
      readonly advice: JobAdvice | null;
      /** Seconds spent on the file: reading, merging, replaying. */
      readonly seconds: number;
      /** CPU seconds of this process meanwhile (user and system). */
      readonly cpuSeconds: number;
    }
  | {
      readonly type: 'oom';
      readonly rank: number;
      readonly file: string;
      readonly step: number | null;
      readonly oom: OomFigures;
      /** The settings it was recorded with, for the post-mortem's title. */
      readonly recordedConf: string | null;
    }
  | { readonly type: 'skipped'; readonly file: string; readonly message: string };

/** The device `watch` replays the candidates on: `--memory` and `--fraction`, else as `tune`. */
export interface WatchDevice {
  readonly memory: number | null;
  readonly fraction: number | null;
}

interface RankState {
  readonly timeline: RankTimeline;
  device: number;
  file: string;
  step: number | null;
  /** The restart of the rank's process its latest dump came from. */
  restart: number;
  dumps: number;
  stats: DumpStats;
  trend: TrendPoint[];
  diedAt: RankRow['diedAt'];
  /** Each candidate replayed on the wall of the rank's out-of-memory dump, asking for its request. */
  atWall: SettingFigures[] | null;
}

/** Lets the event loop turn (a test runner's messages, Ctrl-C, the server) between replays. */
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));

/** CPU seconds (user and system) since `start`. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

/** Most points of a rank's trend kept. */
const TREND_POINTS = 64;

/** The job (see the module comment). */
export class WatchedJob {
  readonly candidates: readonly string[];
  private readonly ranks = new Map<number, RankState>();
  private latestAdvice: JobAdvice | null = null;
  /** Files skipped, with why. */
  readonly skipped: { readonly file: string; readonly message: string }[] = [];
  /** The post-mortems so far, by rank. */
  readonly ooms = new Map<number, Extract<WatchUpdate, { type: 'oom' }>>();

  constructor(readonly device: WatchDevice) {
    this.candidates = jobCandidates(device.fraction !== null);
  }

  /** Reads `found` and takes it into its rank's timeline; the updates it makes. */
  async add(found: FoundDump): Promise<WatchUpdate[]> {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const state = this.ranks.get(found.rank);
    if (
      state !== undefined &&
      state.step !== null &&
      found.step !== null &&
      dumpOrder({ ...found, oom: false, exit: false }, { ...state, oom: false }) < 0
    ) {
      const merged = state.restart > 0 ? ` of its restart ${state.restart}` : '';
      return [
        this.skip(
          found.file,
          `older than step ${state.step}${merged}, which rank ${found.rank} has already merged`,
        ),
      ];
    }
    let dump: Dump;
    try {
      dump = await readDump(found.path, found.file);
    } catch (error) {
      return [this.skip(found.file, failureOf(error, found.file).message)];
    }
    const sidecar = await sidecarOf(found.path);
    if (sidecar !== null) dump = { ...dump, trace: withSidecar(dump.trace, sidecar) };
    await breathe();
    const rank = state ?? this.newRank(dump);
    const joined = await rank.timeline.add(dump, found.file, breathe);
    // Shown (rows, /metrics) once it has figures: a page may ask while the first dump replays.
    this.ranks.set(found.rank, rank);
    rank.device = dump.device;
    rank.file = found.file;
    rank.step = found.step ?? rank.step;
    rank.restart = found.restart ?? 0;
    rank.dumps++;
    rank.stats = dumpStats(dump.segments, dump.device);
    const updates: WatchUpdate[] = [];
    if ((dump.trace.recordedOoms?.length ?? 0) > 0 && rank.diedAt === null) {
      rank.diedAt = { file: found.file, step: found.oomStep ?? null };
      updates.push(await this.postMortem(found, dump.trace, rank));
    }
    this.latestAdvice = this.advise();
    rank.trend.push({
      step: found.step,
      file: found.file,
      recordedPeakBytes: joined.recordedPeakBytes,
      peakReservedBytes: rank.timeline.figures()[0]!.peakReservedBytes,
      reservedBytes: rank.stats.reserved_bytes.all,
      allocatedBytes: rank.stats.allocated_bytes.all,
      advisedPeakReservedBytes: this.advisedPeak(rank),
    });
    if (rank.trend.length > TREND_POINTS) rank.trend.shift();
    updates.unshift({
      type: 'rank',
      row: this.rowOf(found.rank, rank),
      joined,
      advice: this.latestAdvice,
      seconds: (performance.now() - started) / 1000,
      cpuSeconds: cpuSince(cpu),
    });
    return updates;
  }

  /** The job's advice so far, or null before any rank. */
  get advice(): JobAdvice | null {
    return this.latestAdvice;
  }

  /** Every rank's row, by rank. */
  rows(): RankRow[] {
    return [...this.ranks.keys()]
      .sort((a, b) => a - b)
      .map((rank) => this.rowOf(rank, this.ranks.get(rank)!));
  }

  private skip(file: string, message: string): WatchUpdate {
    this.skipped.push({ file, message });
    return { type: 'skipped', file, message };
  }

  private newRank(dump: Dump): RankState {
    const stated = {
      ...(this.device.memory !== null ? { memory: this.device.memory } : {}),
      ...(this.device.fraction !== null ? { fraction: this.device.fraction } : {}),
    };
    return {
      timeline: new RankTimeline(this.candidates, searchDevice(dump.trace, stated).device),
      device: dump.device,
      file: '',
      step: null,
      restart: 0,
      dumps: 0,
      stats: dumpStats(undefined, dump.device),
      trend: [],
      diedAt: null,
      atWall: null,
    };
  }

  /** The post-mortem of `trace`'s first recorded error, and every candidate at its wall. */
  private async postMortem(
    found: FoundDump,
    trace: Trace,
    rank: RankState,
  ): Promise<Extract<WatchUpdate, { type: 'oom' }>> {
    const stated = this.device.memory !== null ? this.device : undefined;
    await breathe();
    const figures = tracePostMortem(trace, stated);
    const wall = replayDevice(trace, stated);
    if (wall.memory !== null) {
      const atWall: SettingFigures[] = [];
      for (const config of this.candidates) {
        await breathe();
        const run = runPool(trace, parseAllocConf(config), wall);
        atWall.push({
          config,
          peakReservedBytes: run.peakReservedBytes,
          failures: run.failures,
          segmentCalls: segmentCalls(run),
        });
      }
      rank.atWall = atWall;
    }
    const conf = trace.meta.torchAllocConf;
    const update = {
      type: 'oom' as const,
      rank: found.rank,
      file: found.file,
      step: found.oomStep ?? null,
      oom: figures[0]!,
      recordedConf: typeof conf === 'string' ? conf : null,
    };
    this.ooms.set(found.rank, update);
    return update;
  }

  /** A rank's figures per candidate: its timeline's, with its wall's failures if it died. */
  private candidateFigures(rank: RankState): SettingFigures[] {
    const timeline = rank.timeline.figures().slice(1);
    if (rank.atWall === null) return timeline;
    return timeline.map((own, i) => {
      const wall = rank.atWall![i]!;
      return {
        config: own.config,
        peakReservedBytes: Math.max(own.peakReservedBytes, wall.peakReservedBytes),
        failures: own.failures + wall.failures,
        segmentCalls: own.segmentCalls,
      };
    });
  }

  private advise(): JobAdvice | null {
    const ranks = [...this.ranks.entries()].map(([rank, state]) => ({
      rank,
      settings: this.candidateFigures(state),
    }));
    return adviseJob(this.candidates, ranks);
  }

  /** A rank's peak reserved bytes under the job's advice so far, or null before one. */
  private advisedPeak(state: RankState): number | null {
    const advice = this.latestAdvice;
    return advice === null ? null : this.candidateFigures(state)[advice.index]!.peakReservedBytes;
  }

  private rowOf(rank: number, state: RankState): RankRow {
    const figures = state.timeline.figures();
    return {
      rank,
      device: state.device,
      file: state.file,
      step: state.step,
      dumps: state.dumps,
      stats: state.stats,
      recordedPeakReservedBytes: state.timeline.recordedPeakReservedBytes,
      peakReservedBytes: figures[0]!.peakReservedBytes,
      advisedPeakReservedBytes: this.advisedPeak(state),
      recordedConf: state.timeline.recordedConf,
      entries: state.timeline.entries,
      ooms: state.timeline.ooms,
      gaps: state.timeline.gaps,
      trend: state.trend,
      diedAt: state.diedAt,
    };
  }
}
