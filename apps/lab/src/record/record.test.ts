/**
 * `allot-lab record` through the built CLI (dist/cli.js, which `pnpm test` builds first), running
 * real Python programs against a stand-in torch (python/tests/stand-in: PyTorch's API as the
 * recorder uses it, with a simulated device, every call logged), since these machines have no GPU.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const lab = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(lab, 'dist', 'cli.js');
const standIn = join(lab, 'python', 'tests', 'stand-in');
const hasPython = spawnSync('python3', ['--version']).status === 0;
const ready = hasPython && existsSync(cli);
if (!ready) {
  console.warn(
    `record tests skipped: ${hasPython ? `${cli} is not built (pnpm build)` : 'no python3 on PATH'}`,
  );
}

interface Recorded {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The record folder's file names, sorted. */
  readonly files: string[];
  readonly out: string;
  /** The stand-in torch's calls, in order. */
  readonly calls: { call: string; [key: string]: unknown }[];
}

interface Job {
  readonly folder: string;
  readonly out: string;
  readonly log: string;
  readonly env: NodeJS.ProcessEnv;
}

/** A folder for one run: the program, the record folder, the stand-in's log. */
function job(env: NodeJS.ProcessEnv = {}): Job {
  const folder = mkdtempSync(join(tmpdir(), 'allot-record-'));
  const log = join(folder, 'torch-calls.jsonl');
  return {
    folder,
    out: join(folder, 'out'),
    log,
    env: {
      ...process.env,
      PYTHONPATH: standIn,
      STAND_IN_TORCH_LOG: log,
      PYTHONDONTWRITEBYTECODE: '1',
      ...env,
    },
  };
}

function program(at: Job, text: string, name = 'train.py'): string {
  const path = join(at.folder, name);
  writeFileSync(path, text);
  return path;
}

/** Starts `allot-lab record ARGS -- COMMAND` in its own session (no terminal sends it signals). */
function start(at: Job, args: readonly string[], command: readonly string[]): ChildProcess {
  return spawn(process.execPath, [cli, 'record', '--out', at.out, ...args, '--', ...command], {
    cwd: at.folder,
    env: at.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function finish(at: Job, child: ChildProcess): Promise<Recorded> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const status = await new Promise<number | null>((done) => child.on('close', done));
  return {
    status,
    stdout,
    stderr,
    out: at.out,
    files: existsSync(at.out) ? readdirSync(at.out).sort() : [],
    calls: existsSync(at.log)
      ? readFileSync(at.log, 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line))
      : [],
  };
}

function record(at: Job, args: readonly string[], command: readonly string[]) {
  return finish(at, start(at, args, command));
}

/** `allot-lab ARGS` through the built CLI, waited for without holding the event loop. */
async function allotLab(args: readonly string[], cwd?: string) {
  const child = spawn(process.execPath, [cli, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const status = await new Promise<number | null>((done) => child.on('close', done));
  return { status, stdout, stderr };
}

/** Waits for `path` to exist (a program's "ready" mark), up to a generous deadline. */
async function appears(path: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** record's own lines on stderr (the start line, the bootstrap's lines, the closing line). */
function recordLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('allot-lab record: '));
}

/** A program on the stand-in: CUDA initialized, `steps` optimizer steps with tensors made. */
const TRAIN = `
import os, sys, torch
torch.cuda.set_device(0)
opt, other = torch.optim.SGD([]), torch.optim.SGD([])
live = []
for step in range(int(sys.argv[1])):
    live.append(torch.cuda.allocate(3 * 2**20))
    if len(live) > 2:
        torch.cuda.free(live.pop(0))
    opt.step()
    other.step()
`;

describe.skipIf(!ready)('allot-lab record', () => {
  it("prints the command's output, exits as it did, and says in one line why nothing was recorded", async () => {
    const at = job();
    const run = await record(at, [], ['python3', '-c', 'import sys; print(1); sys.exit(3)']);
    expect(run.stdout).toBe('1\n');
    expect(run.status).toBe(3);
    const lines = recordLines(run.stderr);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^allot-lab record: snapshots of every rank go to .*out \(every 300 s/,
    );
    expect(lines[1]).toBe(
      'allot-lab record: nothing was recorded: 1 Python process ran and none imported torch',
    );
    expect(run.stderr.split('\n').filter((line) => line !== '')).toHaveLength(2);
    expect((await record(job(), [], ['python3', '-c', 'pass'])).status).toBe(0);
    const raised = await record(job(), [], ['python3', '-c', 'raise ValueError("the program")']);
    expect(raised.status).toBe(1);
    expect(raised.stderr).toMatch(/ValueError: the program/);
  });

  it('runs the sitecustomize the user already has, once, and does not import torch for them', async () => {
    const at = job();
    const user = join(at.folder, 'user-site');
    mkdirSync(user);
    writeFileSync(
      join(user, 'sitecustomize.py'),
      `open(${JSON.stringify(join(at.folder, 'ran'))}, 'a').write('ran\\n')\nMARK = 'mine'\n`,
    );
    at.env.PYTHONPATH = `${user}${delimiter}${standIn}`;
    const run = await record(
      at,
      [],
      [
        'python3',
        '-c',
        "import sys, sitecustomize; print(sitecustomize.MARK, 'torch' in sys.modules)",
      ],
    );
    expect(run.stdout).toBe('mine False\n');
    expect(readFileSync(join(at.folder, 'ran'), 'utf8')).toBe('ran\n');
    expect(run.calls).toEqual([]);
    expect(run.status).toBe(0);
  });

  it('stays inert where torch has no CUDA, and says so once', async () => {
    const at = job({ STAND_IN_TORCH_CUDA: '0' });
    const run = await record(at, [], ['python3', '-c', 'import torch; print(torch.__version__)']);
    expect(run.stdout).toBe('2.6.0+stand-in\n');
    const lines = recordLines(run.stderr);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(
        /^allot-lab record: torch 2\.6\.0\+stand-in has no CUDA \(a CPU build\): nothing is recorded in this process \(pid \d+\)$/,
      ),
      'allot-lab record: nothing was recorded: torch 2.6.0+stand-in has no CUDA (a CPU build), in 1 process of 1 Python process',
    ]);
    expect(run.calls).toEqual([]);
    expect(run.files).toEqual([]);
  });

  it('waits for the program to initialize CUDA: importing torch alone records nothing', async () => {
    const at = job();
    const run = await record(
      at,
      [],
      [
        'python3',
        '-c',
        'import torch; opt = torch.optim.SGD([]); opt.step(); print(torch.cuda.is_initialized())',
      ],
    );
    expect(run.stdout).toBe('False\n');
    expect(run.calls.map((c) => c.call)).toEqual(['register_optimizer_step_post_hook']);
    expect(recordLines(run.stderr)[1]).toMatch(
      /nothing was recorded: 1 process of 1 Python process imported torch but none used CUDA/,
    );
  });

  it('records from CUDA initialization on, and dumps every N steps and at exit, each file whole', async () => {
    const at = job({ RANK: '3', PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True' });
    const run = await record(
      at,
      ['--every-steps', '2', '--max-entries', '1000', '--stacks', 'all'],
      ['python3', program(at, TRAIN), '5'],
    );
    expect(run.status).toBe(0);
    const calls = run.calls.map((c) => c.call);
    expect(calls.slice(0, 4)).toEqual([
      'register_optimizer_step_post_hook',
      '_lazy_init',
      '_record_memory_history',
      '_cuda_attach_out_of_memory_observer',
    ]);
    expect(run.calls[2]).toMatchObject({
      enabled: 'all',
      context: 'all',
      stacks: 'all',
      max_entries: 1000,
    });
    // Two optimizers step once each per iteration: 5 steps, not 10.
    expect(run.files).toEqual([
      'rank3_step2.json',
      'rank3_step2.pickle',
      'rank3_step4.json',
      'rank3_step4.pickle',
      'rank3_step5_exit.json',
      'rank3_step5_exit.pickle',
    ]);
    const facts = JSON.parse(readFileSync(join(at.out, 'rank3_step4.json'), 'utf8'));
    expect(facts).toMatchObject({
      format: 'allot-lab-record',
      snapshot: 'rank3_step4.pickle',
      rank: 3,
      step: 4,
      reason: 'step',
      device: 0,
      deviceTotalBytes: 64 * 2 ** 20,
      deviceFreeBytes: 44 * 2 ** 20,
      memoryFraction: 1,
      reservedBytes: 20 * 2 ** 20,
      allocatedBytes: 6 * 2 ** 20,
      allocConf: 'expandable_segments:True',
      maxEntries: 1000,
      stacks: 'all',
      oom: null,
    });
    expect(facts.memoryStats['reserved_bytes.all.peak']).toBe(20 * 2 ** 20);
    expect(recordLines(run.stderr).at(-1)).toBe(
      `allot-lab record: 3 snapshots of 1 rank in ${at.out} (rank 3: 3 (steps 2, 4; exit at step 5)); ` +
        `allot-lab replay ${at.out} and allot-lab tune ${at.out} read them`,
    );
    // The folder is a job the lab reads: rank 3, its exit snapshot of step 5.
    const replay = await allotLab(['replay', at.out, '--no-report', '--quiet']);
    expect(replay.status).toBe(0);
    expect(replay.stdout).toMatch(/Job: 1 ranks \(numbered by allot-lab, step 5\)/);
    expect(replay.stdout).toMatch(/\n +3 +\S*rank3_step5_exit\.pickle /);
  });

  it('dumps from the out-of-memory observer before the error reaches the program', async () => {
    const at = job();
    const train = program(
      at,
      `${TRAIN}
try:
    torch.cuda.allocate(100 * 2**20 + 1)
except torch.cuda.OutOfMemoryError:
    print('snapshot there:', os.path.exists(os.path.join(${JSON.stringify(at.out)}, 'rank0_step2_oom.pickle')))
`,
    );
    const run = await record(at, [], ['python3', train, '2']);
    expect(run.stdout).toBe('snapshot there: True\n');
    expect(run.files).toEqual([
      'rank0_step2_exit.json',
      'rank0_step2_exit.pickle',
      'rank0_step2_oom.json',
      'rank0_step2_oom.pickle',
    ]);
    const facts = JSON.parse(readFileSync(join(at.out, 'rank0_step2_oom.json'), 'utf8'));
    expect(facts.oom).toEqual({
      device: 0,
      allocationBytes: 102 * 2 ** 20,
      limitBytes: 64 * 2 ** 20,
      deviceFreeBytes: 44 * 2 ** 20,
    });
    expect(recordLines(run.stderr).at(-1)).toMatch(
      /rank 0 ran out of memory in step 3: allot-lab oom .*rank0_step2_oom\.pickle explains it/,
    );
    const oom = await allotLab(['oom', join(at.out, 'rank0_step2_oom.pickle'), '--quiet']);
    // PyTorch's error names the segment (102 MiB), the observer's size; the entry, the request.
    expect(oom.stdout).toContain(
      'a 100 MiB request ("Tried to allocate 102.00 MiB" in PyTorch\'s error: the segment it asked the driver for) on stream 0, 44.0 MiB free on the device',
    );
  });

  it('states the per-process fraction a rank ran out under, and the lab takes its wall from it', async () => {
    const at = job();
    const train = program(
      at,
      `${TRAIN}
torch.cuda.set_per_process_memory_fraction(0.5)
try:
    torch.cuda.allocate(30 * 2**20)
except torch.cuda.OutOfMemoryError:
    pass
`,
    );
    const run = await record(at, [], ['python3', train, '2']);
    expect(run.files).toContain('rank0_step2_oom.pickle');
    const facts = JSON.parse(readFileSync(join(at.out, 'rank0_step2_oom.json'), 'utf8'));
    expect(facts.memoryFraction).toBe(0.5);
    expect(facts.oom).toMatchObject({ limitBytes: 32 * 2 ** 20, allocationBytes: 30 * 2 ** 20 });
    // The device had room (most of its 64 MiB free): the wall is the fraction's 32 MiB.
    expect(facts.oom.deviceFreeBytes).toBeGreaterThan(30 * 2 ** 20);
    const oom = await allotLab(['oom', join(at.out, 'rank0_step2_oom.pickle'), '--quiet']);
    expect(oom.stdout).toContain(
      'the wall: 32.0 MiB (the per-process memory fraction of the card, as recorded)',
    );
    expect(oom.stdout).toMatch(/reproduced: replaying the recorded settings at the wall fails/);
  });

  it('hands SIGTERM and SIGINT to the command, which handles them; record exits as it did', async () => {
    for (const [signal, status] of [
      ['SIGTERM', 7],
      ['SIGINT', 5],
    ] as const) {
      const at = job();
      const mark = join(at.folder, 'ready');
      const child = start(
        at,
        [],
        [
          'python3',
          program(
            at,
            `
import signal, sys, time
def stop(signum, frame):
    print('got', signal.Signals(signum).name, flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, stop)
try:
    # Marked inside the try: a SIGINT that lands as soon as the mark appears is caught too.
    open(${JSON.stringify(mark)}, 'w').close()
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    print('got SIGINT', flush=True)
    sys.exit(5)
`,
          ),
        ],
      );
      await appears(mark);
      child.kill(signal);
      const run = await finish(at, child);
      expect(run.stdout).toBe(`got ${signal}\n`);
      expect(run.status).toBe(status);
    }
  });

  it('writes the exit snapshot at SIGTERM, then lets the signal end the program as it would have', async () => {
    const at = job();
    const mark = join(at.folder, 'ready');
    const train = program(
      at,
      `${TRAIN}
import time
open(${JSON.stringify(mark)}, 'w').close()
while True:
    time.sleep(0.05)
`,
    );
    const child = start(at, [], ['python3', train, '2']);
    await appears(mark);
    child.kill('SIGTERM');
    const run = await finish(at, child);
    expect(run.status).toBe(128 + 15);
    expect(run.files).toEqual(['rank0_step2_exit.json', 'rank0_step2_exit.pickle']);
  });

  it("chains to the program's own SIGTERM handler after the exit snapshot", async () => {
    const at = job();
    const mark = join(at.folder, 'ready');
    const train = program(
      at,
      `
import signal, sys
signal.signal(signal.SIGTERM, lambda signum, frame: (print('handled', flush=True), sys.exit(9)))
${TRAIN}
import time
open(${JSON.stringify(mark)}, 'w').close()
while True:
    time.sleep(0.05)
`,
    );
    const child = start(at, ['--every-steps', '1'], ['python3', train, '1']);
    await appears(mark);
    child.kill('SIGTERM');
    const run = await finish(at, child);
    expect(run.stdout).toBe('handled\n');
    expect(run.status).toBe(9);
    expect(run.files).toEqual([
      'rank0_step1.json',
      'rank0_step1.pickle',
      'rank0_step1_exit.json',
      'rank0_step1_exit.pickle',
    ]);
    expect(run.calls.filter((c) => c.call === '_snapshot')).toHaveLength(2);
  });

  it('records each rank of a job under its RANK', async () => {
    const at = job();
    const train = program(at, TRAIN);
    const launcher = program(
      at,
      `
import os, subprocess, sys
ranks = [subprocess.Popen([sys.executable, ${JSON.stringify(train)}, '4'], env=dict(os.environ, RANK=str(r))) for r in (0, 1)]
sys.exit(max(rank.wait() for rank in ranks))
`,
      'launch.py',
    );
    const run = await record(at, ['--every-steps', '2'], ['python3', launcher]);
    expect(run.status).toBe(0);
    expect(run.files.filter((name) => name.endsWith('.pickle'))).toEqual([
      'rank0_step2.pickle',
      'rank0_step4.pickle',
      'rank0_step4_exit.pickle',
      'rank1_step2.pickle',
      'rank1_step4.pickle',
      'rank1_step4_exit.pickle',
    ]);
    expect(recordLines(run.stderr).at(-1)).toMatch(
      /: 6 snapshots of 2 ranks in .* \(rank 0: 3 \(steps 2, 4; exit at step 4\), rank 1: 3 /,
    );
    const replay = await allotLab(['replay', at.out, '--no-report', '--quiet']);
    expect(replay.stdout).toMatch(/Job: 2 ranks \(numbered by allot-lab, step 4\); 2 replayed/);
  });

  it('refuses, before running anything, a missing command, one not found, and an --out it cannot use', async () => {
    const at = job();
    const bare = await allotLab(['record', 'python3', 'train.py', '--lr', '3']);
    expect(bare.status).toBe(2);
    expect(bare.stderr).toMatch(/record needs the command to run after --/);
    const empty = await allotLab(['record', '--']);
    expect(empty.status).toBe(2);
    const missing = await record(at, [], ['no-such-command-here', '--flag']);
    expect(missing.status).toBe(127);
    expect(missing.stderr).toMatch(/cannot run no-such-command-here: no such command/);
    const mark = join(at.folder, 'ran');
    const touch = ['python3', '-c', `open(${JSON.stringify(mark)}, 'w').close()`];
    writeFileSync(join(at.folder, 'file'), 'x');
    for (const [out, message] of [
      ['file', /--out file: a file of that name is in the way/],
      ['file/below', /--out file\/below: cannot write snapshots there: .*ENOTDIR/],
    ] as const) {
      const run = await allotLab(['record', '--out', out, '--', ...touch], at.folder);
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(message);
    }
    mkdirSync(at.out, { recursive: true });
    writeFileSync(join(at.out, 'rank0_step4.pickle'), 'x');
    const held = await record(at, [], touch);
    expect(held.status).toBe(2);
    expect(held.stderr).toMatch(/already holds 1 snapshots \(rank0_step4\.pickle\)/);
    expect(existsSync(mark)).toBe(false);
  });
});
