import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readerFixtures } from './fixtures/make-fixtures';

const folder = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const update = process.env.ALLOT_UPDATE_FIXTURES === '1';

describe('reader fixtures', () => {
  it('are what make-fixtures.ts generates (ALLOT_UPDATE_FIXTURES=1 rewrites them)', () => {
    for (const [name, content] of readerFixtures()) {
      const path = join(folder, name);
      if (update || !existsSync(path)) writeFileSync(path, content);
      const committed = readFileSync(path, 'utf8');
      // JSON is compared as data: the formatter may lay the committed files out differently.
      if (name.endsWith('.json')) expect(JSON.parse(committed), name).toEqual(JSON.parse(content));
      else expect(committed, name).toBe(content);
    }
  });
});
