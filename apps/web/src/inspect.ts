/**
 * The engine worker's answers about one moment and about two traces: the pool's state at an event
 * (a {@link PoolStepper} kept per trace, so that stepping forward goes on from where it is) with
 * who holds the memory then by call stack, and the allocations that grew from one trace's peak to
 * another's. State requests come faster than
 * a replay answers them while a user holds an arrow key: only the latest waiting one is answered.
 */
import {
  type AllocatorSettings,
  grownGroups,
  PoolStepper,
  parseAllocConf,
  stackTreeAt,
  type Trace,
  type WhatIfLab,
} from '@allot/lab/engine';
import { stackTreePageData } from '@allot/lab/report';
import { whatIfOf } from './knobs';
import type { FromEngine, StateRequest, ToEngine } from './protocol';

type InspectRequest = Extract<ToEngine, { type: 'state' | 'compare' }>;

/** The handler of state and compare requests over the traces of `lab`. */
export function inspector(
  lab: WhatIfLab,
  base: () => AllocatorSettings,
  post: (message: FromEngine) => void,
): (message: InspectRequest) => void {
  const steppers = new WeakMap<Trace, PoolStepper>();
  let latest: StateRequest | null = null;

  function answer(): void {
    const request = latest;
    latest = null;
    if (request === null) return;
    const { seq, trace: index, event, knobs } = request;
    try {
      const trace = lab.traces[index];
      if (trace === undefined) throw new Error(`no trace ${index}`);
      let stepper = steppers.get(trace);
      if (stepper === undefined) steppers.set(trace, (stepper = new PoolStepper(trace)));
      const whatIf = whatIfOf(knobs, base());
      const device = { memory: whatIf.memory, fraction: whatIf.fraction };
      const state = stepper.stateAt(event, parseAllocConf(whatIf.config), device);
      const tree = stackTreeAt(trace, state.event);
      const stacks = tree === null ? null : stackTreePageData(tree);
      post({ type: 'state', seq, trace: index, state, stacks });
    } catch (error) {
      post({ type: 'inspect-failed', seq, message: (error as Error).message });
    }
  }

  return (message) => {
    if (message.type === 'state') {
      // Requests that arrive before this one is answered replace it.
      if (latest === null) setTimeout(answer, 0);
      latest = message;
      return;
    }
    const { seq, before, after } = message;
    try {
      const [first, second] = [lab.traces[before], lab.traces[after]];
      if (first === undefined || second === undefined) throw new Error('no such traces');
      post({ type: 'compared', seq, ...grownGroups(first, second) });
    } catch (error) {
      post({ type: 'inspect-failed', seq, message: (error as Error).message });
    }
  };
}
