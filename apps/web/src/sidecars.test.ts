import { describe, expect, it } from 'vitest';
import { tracesWithSidecars } from './sidecars';

const file = (name: string) => new File(['x'], name);

describe('files given at once', () => {
  it("pairs each snapshot with the recorder's sidecar beside it, which is not opened as a trace", () => {
    const oom = file('rank1_step12_oom.pickle');
    const sidecar = file('rank1_step12_oom.json');
    const plain = file('rank0_step5.pickle.gz');
    const other = file('notes.json');
    const opened = tracesWithSidecars([sidecar, oom, plain, other], false);
    expect(opened).toEqual([{ file: oom, sidecar }, { file: plain }, { file: other }]);
  });

  it("keeps a folder's traces only, each with its sidecar", () => {
    const oom = file('rank1_step12_oom.pickle');
    const sidecar = file('rank1_step12_oom.json');
    const readme = file('README.md');
    expect(tracesWithSidecars([oom, sidecar, readme], true)).toEqual([{ file: oom, sidecar }]);
  });
});

describe('a folder allot-lab record wrote', () => {
  it("opens each rank's newest dump, with its sidecar, as replay DIR reads it", () => {
    const inFolder = (name: string) => {
      const made = file(name);
      Object.defineProperty(made, 'webkitRelativePath', { value: `memory-snapshots/${name}` });
      return made;
    };
    const given = [
      'rank0_step5.pickle',
      'rank0_step5.json',
      'rank0_step26_exit.pickle',
      'rank0_step26_exit.json',
      'rank1_step10.pickle',
      'rank1_step12_oom.pickle',
      'rank1_step12_oom.json',
      'rank1_step12_exit.pickle',
    ].map(inFolder);
    const opened = tracesWithSidecars(given, true);
    expect(opened.map(({ file, sidecar }) => [file.name, sidecar?.name])).toEqual([
      ['rank0_step26_exit.pickle', 'rank0_step26_exit.json'],
      ['rank1_step12_oom.pickle', 'rank1_step12_oom.json'],
    ]);
    // Files chosen one by one are opened as they are.
    expect(tracesWithSidecars(given, false)).toHaveLength(5);
  });
});
