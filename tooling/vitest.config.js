export { default } from './vitest.preset.js';
