import { describe, expect, it } from 'vitest';
import { knobsOf, recordedSettings, whatIfOf } from './knobs';

describe('the controls as settings', () => {
  it('start at the recorded settings and change only what they show', () => {
    const recorded = recordedSettings('max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]');
    const knobs = knobsOf(recorded);
    expect(knobs).toMatchObject({ maxSplitSizeMb: 128, roundupPower2Divisions: null });
    expect(whatIfOf(knobs, recorded).config).toBe(
      'max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4]',
    );
    const plain = recordedSettings(null);
    expect(whatIfOf({ ...knobsOf(plain), expandableSegments: true }, plain)).toEqual({
      config: 'expandable_segments:True',
      memory: null,
      fraction: null,
    });
  });

  it('state the card in bytes, and a fraction only with the memory', () => {
    const plain = recordedSettings('not a setting');
    const knobs = { ...knobsOf(plain), memoryGiB: 80, fraction: 0.5 };
    expect(whatIfOf(knobs, plain)).toMatchObject({ memory: 80 * 2 ** 30, fraction: 0.5 });
    expect(whatIfOf({ ...knobs, memoryGiB: null }, plain)).toMatchObject({
      memory: null,
      fraction: null,
    });
  });
});
