import base from '@allot/tooling/vitest';
import { defineConfig, mergeConfig } from 'vitest/config';

// The shared setup, plus the fake CUDA library compiled once before the tests (test/global-setup.ts).
export default mergeConfig(base, defineConfig({ test: { globalSetup: ['test/global-setup.ts'] } }));
