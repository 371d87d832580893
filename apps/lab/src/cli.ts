#!/usr/bin/env node
/**
 * `allot-lab`: the command-line entry. Everything happens in `lab.ts`; this file only hands it the
 * arguments and the process streams, and sets the exit status (see `allot-lab --help`).
 */
import { lab } from './lab';

process.exitCode = lab(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
