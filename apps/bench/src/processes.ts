/**
 * One figure from several worker processes of the same row. V8 compiles each process's code on
 * its own, in a background thread whose timing decides what feedback the optimiser saw, so on a
 * busy machine one process can land on code 1.5–2× slower than the next. The bench runs each row
 * in a few processes and reports the median of their medians, as an independent harness that
 * repeats a cell in fresh processes would.
 */
import { type CellResult, median } from './measure';

/**
 * Merges the cells of one row measured in several processes, `byProcess[p]` from process p, the
 * first with the capacity search. A cell takes the first process's memory figures and the median of
 * the processes' ns/op (those that measured it); its runs are every process's, in order.
 */
export function mergeProcesses(byProcess: readonly (readonly CellResult[])[]): CellResult[] {
  const [first, ...others] = byProcess;
  if (first === undefined) return [];
  if (others.length === 0) return [...first];
  return first.map((cell) => {
    const same = others
      .map((cells) => cells.find((c) => c.workload === cell.workload))
      .filter((c): c is CellResult => c !== undefined);
    const all = [cell, ...same];
    const medians = all.flatMap((c) => (c.nsPerOp === null ? [] : [c.nsPerOp]));
    return {
      ...cell,
      nsPerOp: medians.length > 0 ? median(medians) : null,
      runs: all.flatMap((c) => c.runs),
      processMedians: medians,
      partial: all.some((c) => c.partial),
      timedEvents: Math.min(...all.map((c) => c.timedEvents)),
      elapsedMs: all.reduce((sum, c) => sum + c.elapsedMs, 0),
    };
  });
}
