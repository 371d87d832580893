/**
 * `node make-state-dump.mjs SNAPSHOT OUT.json [--drop-history]`: a PyTorch snapshot pickle (gzip or
 * not) written as its JSON form. With `--drop-history`, a state dump made of a recording: its end
 * state with every device's history dropped, and a stack on each live block by a rule (the n-th
 * live block in the file's order: `model.py` line 10 + n mod 4), for the shared recordings carry
 * none. Run as its own process by the tests (`state-dumps.ts`): unpickling a recording of half a
 * million entries holds a loop for seconds.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { unpickle } from '@allot/pickle';

/** Source lines the made stacks take, in turn. */
const MADE_LINES = 4;

const [input, output, flag] = process.argv.slice(2);
const bytes = readFileSync(input);
const plain = input.endsWith('.gz') ? gunzipSync(bytes) : bytes;
const snapshot = unpickle(new Uint8Array(plain.buffer, plain.byteOffset, plain.length));
let written = snapshot;
if (flag === '--drop-history') {
  let n = 0;
  const segments = snapshot.segments.map((segment) => ({
    ...segment,
    blocks: segment.blocks.map((block) =>
      block.state === 'inactive'
        ? block
        : {
            ...block,
            frames: [
              { filename: 'model.py', line: 10 + (n++ % MADE_LINES), name: 'layer' },
              { filename: 'run.py', line: 5, name: 'main' },
            ],
          },
    ),
  }));
  written = { ...snapshot, segments, device_traces: snapshot.device_traces.map(() => []) };
}
writeFileSync(output, JSON.stringify(written));
