/**
 * Sizes and figures as people read them: `parseSize('16GiB')`, `formatBytes(1.5 * 2 ** 30)`. The
 * one formatter of the command line, the report and the web app (which import it through
 * `@allot/lab/ui`): no Node.js module here.
 */
import { formatBytes as formatBinary } from '@allot/core';

/**
 * Size units: SI prefixes are powers of ten (`GB` = 10^9 B, as disk and GPU makers count) and IEC
 * prefixes powers of two (`GiB` = 2^30 B); a bare letter (`g`, `16g`) is binary, as in `ulimit`.
 */
const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  k: 2 ** 10,
  kb: 1e3,
  kib: 2 ** 10,
  m: 2 ** 20,
  mb: 1e6,
  mib: 2 ** 20,
  g: 2 ** 30,
  gb: 1e9,
  gib: 2 ** 30,
  t: 2 ** 40,
  tb: 1e12,
  tib: 2 ** 40,
};

/**
 * Bytes from `"4096"`, `"512MiB"`, `"16GiB"`, `"80GB"` (10^9), `"1.5g"` (binary), or `null` when the
 * text is not a size of at least one byte.
 */
export function parseSize(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return null;
  const unit = UNITS[(match[2] ?? '').toLowerCase() || 'b'];
  if (unit === undefined) return null;
  const bytes = Math.round(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) && bytes >= 1 ? bytes : null;
}

/**
 * `1.50 GiB`, `512 B`: three significant figures in the largest binary unit that fits (a fraction
 * of a byte, as a scale's bytes per pixel may be, rounded to a whole byte).
 */
export function formatBytes(bytes: number): string {
  return formatBinary(Math.abs(bytes) < 1024 ? Math.round(bytes) : bytes, {
    significantFigures: 3,
  });
}

/** An axis tick in bytes, without trailing zeros: `0`, `512 MiB`, `1.5 GiB`, `4 GiB`. */
export function formatTickBytes(bytes: number): string {
  if (bytes === 0) return '0';
  return formatBinary(bytes)
    .replace(/(\.\d*?)0+ /, '$1 ')
    .replace('. ', ' ');
}

/** Seconds on an axis or in a tooltip, six significant figures at most: `0.002 s`, `1.5 s`. */
export function formatTickSeconds(seconds: number): string {
  return `${+seconds.toPrecision(6)} s`;
}

/** `12,345` */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** `12.3 %` from a fraction. */
export function formatPercent(fraction: number, digits = 1): string {
  return `${(fraction * 100).toFixed(digits)} %`;
}

/** `+4.3 %`, `−0.2 %`, `+0.0 %`, from a fraction: a sign always, as a job's error is printed. */
export function formatSignedPercent(fraction: number): string {
  return `${fraction >= 0 ? '+' : '−'}${formatPercent(Math.abs(fraction))}`;
}

/** `+4.3 %`, `−0.2 %`, `0.0 %`, from a fraction. */
export function formatChange(fraction: number): string {
  const text = `${Math.abs(fraction * 100).toFixed(1)} %`;
  return fraction > 0 ? `+${text}` : fraction < 0 ? `−${text}` : text;
}

/** Seconds as the tables state them: `0.002 s`, `4.941 s`, `12.50 s`. */
export function formatSeconds(seconds: number): string {
  return `${seconds.toFixed(seconds < 10 ? 3 : 2)} s`;
}

/** A `PYTORCH_CUDA_ALLOC_CONF` as people read it: the string, or PyTorch's defaults for ''. */
export function settingName(config: string): string {
  return config === '' ? "PyTorch's defaults" : config;
}

/**
 * Bytes as PyTorch's messages write them (`format_size` in `CUDACachingAllocator.cpp`: bytes up to
 * 1 KiB, then KiB, MiB or GiB with two decimals), so a figure can be found in its error as it is.
 */
export function formatTorchSize(bytes: number): string {
  if (bytes <= 1024) return `${bytes} bytes`;
  if (bytes <= 1024 ** 2) return `${(bytes / 1024).toFixed(2)} KiB`;
  if (bytes <= 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(2)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

/**
 * PyTorch's words for an out-of-memory error's request, in brackets after a space, and what they
 * name when it is not the request itself; empty when the size it named is not known.
 */
export function triedToAllocate(sizeBytes: number, allocationBytes: number | undefined): string {
  if (allocationBytes === undefined) return '';
  const named = formatTorchSize(allocationBytes);
  const words = `"Tried to allocate ${named}" in PyTorch's error`;
  return named === formatTorchSize(sizeBytes)
    ? ` (${words})`
    : ` (${words}: the segment it asked the driver for)`;
}

/**
 * Where an out-of-memory wall came from: the `oom` entry (reserved + `device_free`), the options,
 * or the card and per-process fraction a recorder's sidecar states.
 */
export type WallSource = 'oom' | '--memory' | '--fraction' | 'recorded';

/** What an out-of-memory wall is made of (`OomFigures.capacitySource`), in words. */
export function wallOrigin(source: WallSource | null): string {
  switch (source) {
    case 'oom':
      return 'reserved + device_free';
    case 'recorded':
      return 'the per-process memory fraction of the card, as recorded';
    case '--memory':
      return 'as --memory states it';
    case '--fraction':
      return 'as --memory and --fraction state it';
    default:
      return 'unknown';
  }
}

/** `1.029×` */
export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(3)}×` : '–';
}

/**
 * Lays out rows of cells in columns; columns after the first are right-aligned (figures), except
 * those `leftAligned` names (text).
 */
export function formatColumns(
  rows: readonly (readonly string[])[],
  leftAligned: readonly number[] = [0],
): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) =>
        leftAligned.includes(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!),
      )
      .join('  ')
      .trimEnd(),
  );
}
