const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** Options of {@link formatBytes}. */
export interface FormatBytesOptions {
  /**
   * Round to this many significant figures (`3`: `1.50 GiB`, `14.2 GiB`, `512 MiB`) instead of two
   * decimals (`14.20 GiB`). @defaultValue two decimals
   */
  readonly significantFigures?: number;
}

/**
 * Human-readable binary size: `1536` → `1.50 KiB`, in the largest binary unit that fits. Exact bytes
 * below 1 KiB.
 */
export function formatBytes(bytes: number, options: FormatBytesOptions = {}): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${sign}${value} B`;
  const figures = options.significantFigures;
  // Digits after the point: the figures left once those before it are counted (value < 1024).
  const digits =
    figures === undefined ? 2 : Math.max(0, figures - (value >= 100 ? 3 : value >= 10 ? 2 : 1));
  return `${sign}${value.toFixed(digits)} ${UNITS[unit]}`;
}
