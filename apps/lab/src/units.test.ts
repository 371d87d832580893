import { describe, expect, it } from 'vitest';
import {
  formatBytes,
  formatChange,
  formatSeconds,
  formatSignedPercent,
  formatTickBytes,
  formatTickSeconds,
  formatTorchSize,
  settingName,
  triedToAllocate,
} from './units';

const GiB = 2 ** 30;

describe('the one formatter of figures', () => {
  it('gives bytes three significant figures, a fraction of a byte as a whole byte', () => {
    expect(formatBytes(1.5 * GiB)).toBe('1.50 GiB');
    expect(formatBytes(14.2 * GiB)).toBe('14.2 GiB');
    expect(formatBytes(512 * 2 ** 20)).toBe('512 MiB');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(123.4)).toBe('123 B');
    expect(formatBytes(0.5)).toBe('1 B');
    expect(formatBytes(-3 * GiB)).toBe('-3.00 GiB');
  });

  it("writes a size as PyTorch's messages do, so it can be found in a job's log", () => {
    // format_size's thresholds are inclusive: 1024 bytes is still bytes, 1 MiB still KiB.
    expect(formatTorchSize(1024)).toBe('1024 bytes');
    expect(formatTorchSize(1025)).toBe('1.00 KiB');
    expect(formatTorchSize(2 ** 20)).toBe('1024.00 KiB');
    expect(formatTorchSize(60 * 2 ** 20)).toBe('60.00 MiB');
    expect(formatTorchSize(2 ** 30)).toBe('1024.00 MiB');
    expect(formatTorchSize(4_250_874_675)).toBe('3.96 GiB');
    // The request, and the segment PyTorch's error names when it is not the request.
    expect(triedToAllocate(60 * 2 ** 20, 60 * 2 ** 20)).toBe(
      ' ("Tried to allocate 60.00 MiB" in PyTorch\'s error)',
    );
    expect(triedToAllocate(5 * 2 ** 20, 20 * 2 ** 20)).toBe(
      ' ("Tried to allocate 20.00 MiB" in PyTorch\'s error: the segment it asked the driver for)',
    );
    expect(triedToAllocate(5 * 2 ** 20, undefined)).toBe('');
  });

  it('ticks bytes without trailing zeros', () => {
    const ticks = [0, 1, 100, 512, 1024, 1536, 2 ** 20, 1.5 * GiB, 4 * GiB, 3 * 2 ** 40, -GiB];
    expect(ticks.map(formatTickBytes)).toEqual([
      '0',
      '1 B',
      '100 B',
      '512 B',
      '1 KiB',
      '1.5 KiB',
      '1 MiB',
      '1.5 GiB',
      '4 GiB',
      '3 TiB',
      '-1 GiB',
    ]);
    expect(formatTickBytes(123456789)).toBe('117.74 MiB');
  });

  it('says changes, seconds and settings as the tables do', () => {
    expect([0.043, -0.002, 0].map(formatChange)).toEqual(['+4.3 %', '−0.2 %', '0.0 %']);
    // A job's error always has its sign, as the terminal and the job's page print it.
    expect([0.043, -0.002, 0].map(formatSignedPercent)).toEqual(['+4.3 %', '−0.2 %', '+0.0 %']);
    expect([0.002, 4.941, 12.5].map(formatSeconds)).toEqual(['0.002 s', '4.941 s', '12.50 s']);
    expect([0.002, 1.5, 1 / 3].map(formatTickSeconds)).toEqual(['0.002 s', '1.5 s', '0.333333 s']);
    expect(settingName('')).toBe("PyTorch's defaults");
    expect(settingName('expandable_segments:True')).toBe('expandable_segments:True');
  });
});
