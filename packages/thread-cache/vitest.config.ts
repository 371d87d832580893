// The shared preset, plus a global setup that builds `dist/` for the stress workers when it is stale.
import preset from '@allot/tooling/vitest';
import { mergeConfig } from 'vitest/config';

export default mergeConfig(preset, { test: { globalSetup: ['./test/global-setup.ts'] } });
