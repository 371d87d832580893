import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { layerOf, upwardImports } from '../scripts/check-layers.mjs';

const LAYERS = [
  { name: 'base', files: ['units.ts'] },
  { name: 'analysis', files: ['analysis/**'] },
  { name: 'commands', files: ['**'] },
];

/** A package folder whose src/ holds `files` (path under src/ to source). */
function packageWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'layers-'));
  for (const [path, source] of Object.entries(files)) {
    const file = join(dir, 'src', path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, source);
  }
  return dir;
}

describe('check-layers', () => {
  it('puts a file in the first layer that names it, folders by prefix', () => {
    expect(layerOf(LAYERS, 'units.ts')).toBe(0);
    expect(layerOf(LAYERS, 'analysis/tune.ts')).toBe(1);
    expect(layerOf(LAYERS, 'analysis.ts')).toBe(2);
    expect(layerOf([LAYERS[0]!], 'lab.ts')).toBe(-1);
  });

  it('passes imports down and across, type-only and re-exports included', () => {
    const dir = packageWith({
      'units.ts': 'export const kib = 1024;\n',
      'analysis/tune.ts': "import { kib } from '../units';\nexport const t = kib;\n",
      'analysis/explain.ts': "import type { t } from './tune';\nexport type E = typeof t;\n",
      'lab.ts': "export { t } from './analysis/tune';\nimport './units';\n",
    });
    expect(upwardImports(dir, LAYERS)).toEqual([]);
  });

  it('names every import that runs back up, and a file in no layer', () => {
    const dir = packageWith({
      'units.ts': "import type { Options } from './options';\nexport const kib = 1024;\n",
      'analysis/tune.ts': "export { lab } from '../lab';\n",
      'lab.ts': 'export const lab = 1;\n',
      'options.ts': 'export interface Options {}\n',
      'analysis/tune.test.ts': "import { lab } from '../lab';\n",
    });
    expect(upwardImports(dir, LAYERS).sort()).toEqual([
      'analysis/tune.ts (analysis) imports lab.ts (commands)',
      'units.ts (base) imports options.ts (commands)',
    ]);
    expect(upwardImports(dir, LAYERS.slice(0, 2))).toContain('lab.ts: in no layer');
  });
});
