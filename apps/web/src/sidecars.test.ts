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
