/**
 * The published declarations compile for a consumer without `@types/node` (a browser or WebGPU
 * project): nothing in them may name a `node:` module.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

describe('declarations', () => {
  it.skipIf(!existsSync(dist))('type-check without @types/node', () => {
    const dir = mkdtempSync(join(tmpdir(), 'allot-stats-types-'));
    writeFileSync(
      join(dir, 'consumer.ts'),
      `import { serveMetrics, withStats, type MetricsServer } from ${JSON.stringify(dist)};\n` +
        'export const used: unknown[] = [serveMetrics, withStats];\n' +
        'export type Server = MetricsServer;\n',
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022'],
          types: [],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
