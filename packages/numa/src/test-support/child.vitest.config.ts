// Configuration of the child processes that memlock.test.ts starts (never part of `pnpm test`).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/test-support/*.child.ts'],
    environment: 'node',
    pool: 'forks',
  },
});
