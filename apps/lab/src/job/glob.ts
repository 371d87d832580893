/**
 * Globs for a job's input, for when the shell did not expand one (it was quoted, or too many files
 * for a command line): `*`, `?`, `[abc]`, `{a,b}` within a name and `**` for any folders below.
 * A wildcard does not match a name starting with a dot. Node 20 has no `fs.glob`.
 */
import { readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';

/** Whether `text` holds a glob's special characters. */
export function isGlob(text: string): boolean {
  return /[*?[{]/.test(text);
}

/** A RegExp for one name of a glob (a part between slashes). */
export function namePattern(part: string): RegExp {
  let source = '';
  for (let i = 0; i < part.length; i++) {
    const ch = part[i]!;
    if (ch === '*') source += '[^/]*';
    else if (ch === '?') source += '[^/]';
    else if (ch === '[') {
      const end = part.indexOf(']', i + 2);
      if (end < 0) source += '\\[';
      else {
        const inner = part
          .slice(i + 1, end)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\');
        source += `[${inner}]`;
        i = end;
      }
    } else if (ch === '{') {
      const end = part.indexOf('}', i);
      if (end < 0) source += '\\{';
      else {
        const options = part
          .slice(i + 1, end)
          .split(',')
          .map(escapeText);
        source += `(?:${options.join('|')})`;
        i = end;
      }
    } else source += escapeText(ch);
  }
  return new RegExp(`^${source}$`);
}

function escapeText(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function entriesOf(folder: string): { name: string; folder: boolean }[] {
  try {
    return readdirSync(folder, { withFileTypes: true }).map((entry) => ({
      name: entry.name,
      folder: entry.isDirectory() || (entry.isSymbolicLink() && isFolder(join(folder, entry.name))),
    }));
  } catch {
    return [];
  }
}

function isFolder(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

/** The paths `pattern` (relative to `cwd`, or absolute) matches: absolute, sorted, no repeats. */
export function expandGlob(pattern: string, cwd: string): string[] {
  const parts = pattern.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
  let start = isAbsolute(pattern) ? resolve('/') : cwd;
  while (parts.length > 0 && !isGlob(parts[0]!)) start = join(start, parts.shift()!);
  const found = new Set<string>();
  const walk = (folder: string, rest: readonly string[]): void => {
    if (rest.length === 0) {
      found.add(folder);
      return;
    }
    const [part, ...after] = rest as [string, ...string[]];
    if (part === '**') {
      walk(folder, after);
      for (const entry of entriesOf(folder)) {
        if (entry.folder && !entry.name.startsWith('.')) walk(join(folder, entry.name), rest);
      }
      return;
    }
    if (!isGlob(part)) {
      walk(join(folder, part), after);
      return;
    }
    const match = namePattern(part);
    for (const entry of entriesOf(folder)) {
      if (entry.name.startsWith('.') && !part.startsWith('.')) continue;
      if (!match.test(entry.name)) continue;
      if (after.length > 0 && !entry.folder) continue;
      walk(join(folder, entry.name), after);
    }
  };
  walk(start, parts);
  return [...found].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}
