/**
 * `node apps/bench/dist/snapshot-gen.js --out FILE [options]`: writes a PyTorch memory snapshot of
 * any size (see `torchSnapshotChunks` in @allot/workloads), synthetic or a real one with stacks
 * added, as `torch.cuda.memory._dump_snapshot()` would, byte for byte.
 */
import type { TorchSnapshotOptions } from '@allot/workloads';
import { runScript } from './cli-support';
import { parseOptions } from './options';
import {
  formatMegabytes,
  parseByteSize,
  readBaseSnapshot,
  writeSnapshotFile,
} from './snapshot-file';

const USAGE = `Usage: node apps/bench/dist/snapshot-gen.js --out FILE [options]

Writes a PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes, byte for
byte as CPython pickles it), streamed, so any size fits in a few MB of memory.

Options:
  --out FILE            where to write it (required)
  --gzip                gzip it on the way (name the file .pickle.gz)
  --events N            trace entries over all devices (synthetic; default 100000)
  --size SIZE           about this many bytes of pickle instead (250MB, 1GB, 512MiB): synthetic
                        picks the events, --base the stack depth
  --depth N             Python frames per stack; 0 for none (default 16)
  --shared-frames F     share of frames that are PyTorch's cached frame dicts, written once and
                        referred to after, in [0, 1]; the rest are new dicts (default 1)
  --fresh-strings       new file and function name strings in every new frame dict
  --devices N           devices of a synthetic snapshot, each with its trace (default 1)
  --seed N              seed of events and stacks (default 1)
  --base FILE           a real snapshot (.pickle or .pickle.gz): add stacks to its entries,
                        segments and blocks, keep the rest
  -h, --help            this text
`;

function integer(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`--${name} expects an integer, got ${text}`);
  return value;
}

async function main(argv: string[]): Promise<number> {
  const values = parseOptions(argv, {
    out: { type: 'string' },
    gzip: { type: 'boolean' },
    events: { type: 'string' },
    size: { type: 'string' },
    depth: { type: 'string' },
    'shared-frames': { type: 'string' },
    'fresh-strings': { type: 'boolean' },
    devices: { type: 'string' },
    seed: { type: 'string' },
    base: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.out === undefined) throw new Error('--out FILE is required (see --help)');
  let targetBytes: number | undefined;
  if (values.size !== undefined) {
    targetBytes = parseByteSize(values.size) ?? undefined;
    if (targetBytes === undefined) throw new Error(`--size expects a size, got ${values.size}`);
  }
  const shared = values['shared-frames'];
  const options: TorchSnapshotOptions = {
    events: integer('events', values.events),
    targetBytes,
    depth: integer('depth', values.depth),
    sharedFrames: shared === undefined ? undefined : Number(shared),
    sharedStrings: !values['fresh-strings'],
    devices: integer('devices', values.devices),
    seed: integer('seed', values.seed),
    base: values.base === undefined ? undefined : readBaseSnapshot(values.base),
  };
  const file = await writeSnapshotFile(values.out, options, values.gzip ?? false);
  const rate = file.bytes / 1e6 / file.seconds;
  process.stderr.write(
    `${file.path}: ${formatMegabytes(file.bytes)} of pickle` +
      `${file.gzip ? ` (${formatMegabytes(file.fileBytes)} gzipped)` : ''}, ` +
      `${file.events.toLocaleString('en-US')} events, ${file.segments} segments, ` +
      `depth ${file.depth}, shared frames ${file.sharedFrames}, ` +
      `${file.seconds.toFixed(1)} s (${rate.toFixed(0)} MB/s)\n`,
  );
  process.stdout.write(`${JSON.stringify(file)}\n`);
  return 0;
}

runScript('snapshot-gen', main);
