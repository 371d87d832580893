import { describe, expect, it } from 'vitest';
import { checkConformanceAsync } from '../src/check-conformance';
import { brokenCases } from './broken-allocators';

describe('the suite catches deliberately broken allocators', () => {
  for (const { bug, expected, options } of brokenCases) {
    it(`catches ${bug} as [${expected}]`, async () => {
      let message = '';
      try {
        await checkConformanceAsync({ ...options, numRuns: 300 });
      } catch (error) {
        message = String(error);
      }
      expect(message, `${bug} was not caught`).not.toBe('');
      expect(message).toContain(`[${expected}]`);
      // Failures must be replayable: fast-check prints the seed and the path.
      expect(message).toMatch(/seed/);
    });
  }
});
