/**
 * What the lab says of a job's ranks beside its figures, in the terminal and in the web app alike:
 *
 * - ranks recorded with different settings, grouped by the setting each recorded: `tune DIR`
 *   refuses to tune them as one without `--force`; the web app says the same and asks first;
 * - ranks that could not be read: named with their error, the others shown and tuned.
 */
import { formatCount } from '../units';
import { canonicalConf } from './candidates';
import { rankList } from './rank-name';

export { rankList } from './rank-name';

/** The ranks recorded with one setting. */
export interface SettingGroup {
  /** Canonical `PYTORCH_CUDA_ALLOC_CONF`, '' for PyTorch's defaults. */
  readonly allocConf: string;
  readonly ranks: readonly number[];
}

/** A recorded setting in a job's lines: `(defaults)`, `(not recorded)` or the setting. */
export function confText(conf: string | null): string {
  if (conf === null) return '(not recorded)';
  return conf === '' ? '(defaults)' : conf;
}

/** The ranks grouped by the settings they were recorded with (ranks that state none left out). */
export function settingGroups(
  ranks: readonly { readonly rank: number; readonly recordedConf: string | null }[],
): SettingGroup[] {
  const groups = new Map<string, number[]>();
  for (const rank of ranks) {
    if (rank.recordedConf === null) continue;
    const key = canonicalConf(rank.recordedConf) ?? rank.recordedConf;
    const list = groups.get(key) ?? [];
    list.push(rank.rank);
    groups.set(key, list);
  }
  return [...groups].map(([allocConf, list]) => ({ allocConf, ranks: list }));
}

/** `(defaults) on ranks 0; expandable_segments:True on ranks 1`. */
export function settingGroupsText(groups: readonly SettingGroup[]): string {
  return groups
    .map((group) => `${confText(group.allocConf)} on ranks ${rankList(group.ranks)}`)
    .join('; ');
}

/** Why a job is not tuned as one, or null when its ranks recorded one setting (or none). */
export function mixedSettingsText(groups: readonly SettingGroup[]): string | null {
  if (groups.length < 2) return null;
  return (
    `the ranks were recorded with ${groups.length} different settings ` +
    `(${settingGroupsText(groups)}), so they are not tuned as one`
  );
}

/** A rank that could not be read, and why. */
export interface FailedRankNote {
  readonly rank: number;
  readonly message: string;
}

/** `rank 3: cannot read …`: a failed rank in a line. */
export function failedRankText(failed: FailedRankNote): string {
  return `rank ${failed.rank}: ${failed.message}`;
}

/** `1 of 4 ranks failed (rank 3); the others' figures are above`, or null when none failed. */
export function failedRanksText(failed: readonly FailedRankNote[], read: number): string | null {
  if (failed.length === 0) return null;
  const total = failed.length + read;
  return (
    `${formatCount(failed.length)} of ${formatCount(total)} ranks failed ` +
    `(rank ${rankList(failed.map((f) => f.rank))}); the others' figures are above`
  );
}
