export { default } from '@allot/tooling/vitest';
