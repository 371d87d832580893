/**
 * The loop `watch` and `serve --watch` share: look at the folder, read what has landed complete,
 * hand the updates on, wait `interval` seconds, again, until stopped. A stop is seen between two
 * files (the file being read is finished) and wakes the wait at once.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../options';
import { FolderPoll } from './folder-poll';
import type { WatchedJob, WatchUpdate } from './watched-job';

/** A stop that can be asked for from anywhere and waited on. */
export class Stop {
  private asked = false;
  private wake: (() => void) | null = null;

  get stopped(): boolean {
    return this.asked;
  }

  stop(): void {
    this.asked = true;
    this.wake?.();
  }

  /** Waits `ms`, or less when stopped meanwhile. */
  wait(ms: number): Promise<void> {
    return new Promise<void>((done) => {
      if (this.asked) return done();
      const timer = setTimeout(() => {
        this.wake = null;
        done();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        done();
      };
    });
  }
}

/** Options of {@link watchFolder}. */
export interface WatchLoopOptions {
  /** Seconds between two looks at the folder. */
  readonly interval: number;
  /** Read what the folder holds once, every file taken as complete, and return. */
  readonly once: boolean;
  readonly stop: Stop;
  /** Hears the updates of each file read. */
  readonly onUpdates: (updates: readonly WatchUpdate[]) => void;
}

/** Follows `root` into `job` until stopped (see the module comment); returns the files read. */
export async function watchFolder(
  root: string,
  job: WatchedJob,
  options: WatchLoopOptions,
): Promise<number> {
  const poll = new FolderPoll(root);
  let files = 0;
  const { stop } = options;
  while (!stop.stopped) {
    for (const found of await poll.poll(options.once)) {
      if (stop.stopped) break;
      options.onUpdates(await job.add(found));
      files++;
    }
    if (options.once) break;
    await stop.wait(options.interval * 1000);
  }
  return files;
}

/** The folder to follow, `folder` relative to `cwd`, checked. @throws UsageError */
export function watchedFolder(folder: string, cwd: string): string {
  const root = resolve(cwd, folder);
  const stat = statSync(root, { throwIfNoEntry: false });
  if (stat === undefined) throw new UsageError(`cannot watch ${folder}: no such folder (ENOENT)`);
  if (!stat.isDirectory()) throw new UsageError(`cannot watch ${folder}: not a folder`);
  return root;
}
