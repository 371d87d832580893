/**
 * Reading trace files from disk, with the format detected from the content, and finding the shared
 * trace folder (`../shared/traces` beside the repository) without hard-coded paths.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { TraceFormatError } from '../errors';
import type { Trace } from '../trace';
import { parseCsvTrace } from './csv-trace';
import { parseMallocTrace } from './malloc-trace';

/** Trace formats this package reads. */
export type TraceFormat = 'malloc' | 'csv';

/**
 * Guesses the format from the first meaningful line: `Alloc(`/`Free(` is a malloc trace; a line
 * with commas whose first field is `op`, `alloc` or `free` is CSV. Returns `null` otherwise.
 */
export function detectTraceFormat(text: string): TraceFormat | null {
  for (const raw of text.split('\n', 64)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (/^(Alloc|Free)\(/.test(line)) return 'malloc';
    const first = line.split(',')[0]!.trim().toLowerCase();
    if (line.includes(',') && (first === 'op' || first === 'alloc' || first === 'free'))
      return 'csv';
    return null;
  }
  return null;
}

/** Options of {@link readTraceFile}. */
export interface ReadTraceFileOptions {
  /** Skip detection and read this format. */
  readonly format?: TraceFormat;
  /** Trace name. @defaultValue the file's base name */
  readonly name?: string;
}

/**
 * Reads a trace file (gzip-compressed when the name ends in `.gz`), detecting its format.
 *
 * @throws TraceFormatError when the format is unknown or the content is malformed.
 */
export function readTraceFile(path: string, options: ReadTraceFileOptions = {}): Trace {
  const name = options.name ?? basename(path);
  const raw = readFileSync(path);
  const text = (path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  const format = options.format ?? detectTraceFormat(text);
  if (format === 'malloc') return parseMallocTrace(text, { name });
  if (format === 'csv') return parseCsvTrace(text, { name });
  const firstLine = text.split('\n').find((line) => line.trim() !== '') ?? '';
  throw new TraceFormatError(
    name,
    1,
    'a malloc trace (`Alloc(n),` / `Free(k),`) or a CSV trace (`op,id,size[,alignment]`)',
    JSON.stringify(firstLine),
  );
}

/** Environment variable that points at the shared trace folder, overriding the search. */
export const TRACES_DIR_ENV = 'ALLOT_TRACES_DIR';

/** Options of {@link findTracesDir}. */
export interface FindTracesDirOptions {
  /** Where to start walking up. @defaultValue process.cwd(), then this module's folder */
  readonly from?: string;
  /** Environment to read {@link TRACES_DIR_ENV} from. @defaultValue process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function moduleDirectory(): string | null {
  try {
    return dirname(fileURLToPath(import.meta.url));
  } catch {
    return null;
  }
}

/**
 * The shared trace folder: `$ALLOT_TRACES_DIR` when set, else `../shared/traces` beside the
 * repository root, the first folder above `from` (then above this module) that holds
 * `pnpm-workspace.yaml`. Returns `null` when there is none, so callers can skip with a message.
 */
export function findTracesDir(options: FindTracesDirOptions = {}): string | null {
  const env = options.env ?? process.env;
  const override = env[TRACES_DIR_ENV];
  if (override) return isDirectory(override) ? resolve(override) : null;
  const starts = options.from ? [options.from] : [process.cwd(), moduleDirectory()];
  for (const start of starts) {
    if (!start) continue;
    let dir = resolve(start);
    for (;;) {
      if (existsSync(join(dir, 'pnpm-workspace.yaml'))) {
        const candidate = resolve(dir, '..', 'shared', 'traces');
        if (isDirectory(candidate)) return candidate;
        break;
      }
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return null;
}
