/**
 * What the figures of a state dump under other settings are: an estimate, and what it assumes. A
 * dump (`Trace.dump`: `torch.cuda.memory._snapshot()` without recorded history) holds one moment
 * and no allocation before it, so no setting can be replayed on it. What can be asked is what the
 * same live blocks would need from an empty pool under each setting: the trace's events allocate
 * them one after another, in address order, and nothing is freed between them.
 *
 * Address order is the order a program that fills its memory from the bottom allocates in: PyTorch
 * cuts a block from the start of a free one and keeps the rest after it, and the driver mostly
 * hands out rising addresses, so the blocks that outlive their neighbours keep their order. What
 * the estimate leaves out is what the blocks freed before the dump left: the holes, and the
 * segments they made PyTorch allocate.
 */
import type { Trace } from '@allot/workloads';
import { formatBytes, formatCount } from '../units';

/** What an estimate on a state dump assumed (see the module comment). */
export interface DumpEstimateBasis {
  /** It is an estimate, not a replay. */
  readonly estimate: true;
  /** The order the live blocks were allocated in. */
  readonly order: 'address';
  /** Live blocks allocated, and their bytes requested. */
  readonly blocks: number;
  readonly bytes: number;
  /** The estimate and its assumption, in a sentence. */
  readonly assumes: string;
}

/** Whether `trace` is a state dump: its figures under a setting are estimates. */
export function isStateDump(trace: Trace): boolean {
  return trace.dump !== undefined;
}

/** What an estimate on `trace` assumes, when it is a state dump (see the module comment). */
export function estimateBasis(trace: Trace): DumpEstimateBasis | undefined {
  if (trace.dump === undefined) return undefined;
  let bytes = 0;
  for (let i = 0; i < trace.length; i++) bytes += trace.size[i]!;
  const blocks = trace.allocCount;
  return {
    estimate: true,
    order: 'address',
    blocks,
    bytes,
    assumes:
      `An estimate, not a replay: a state dump records no history, so its ${formatCount(blocks)} live ` +
      `${blocks === 1 ? 'block' : 'blocks'} (${formatBytes(bytes)} requested) ${blocks === 1 ? 'is' : 'are'} allocated into an empty pool under each ` +
      'setting, one after another in address order (the order a program that fills its memory from the bottom ' +
      'allocates in), with nothing freed between them; the holes that blocks freed before the dump left are not in it.',
  };
}
