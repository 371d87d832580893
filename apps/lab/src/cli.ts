#!/usr/bin/env node
/**
 * `allot-lab`: the command-line entry. Everything happens in `lab.ts`; this file only hands it the
 * arguments and the process streams, and sets the exit status (see `allot-lab --help`). `lab`
 * reports its own failures; anything that still escapes is a bug, reported the same way.
 */
import { reportFailure } from './failure';
import { lab } from './lab';

const argv = process.argv.slice(2);
try {
  process.exitCode = await lab(argv, { stdout: process.stdout, stderr: process.stderr });
} catch (error) {
  process.exitCode = reportFailure(error, process.stderr, argv.includes('--debug'));
}
