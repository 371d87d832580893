/**
 * Which signals `allot-lab record` hands to the command it runs. The command is its child, in its
 * process group, so a signal that reaches the whole group (Ctrl-C on a terminal, a hang-up) has
 * reached the command already; a signal sent to record alone (`kill PID`, a scheduler or
 * Kubernetes stopping the container's first process) has not.
 *
 * ```
 *  SIGTERM                     ─► forwarded to the command, always
 *  SIGINT, SIGHUP              ─► forwarded, unless record is the terminal's foreground group:
 *                                 the terminal sent it to the command too, and once is what the
 *                                 command would have got without record
 * ```
 */
import { readFileSync } from 'node:fs';

/** The signals record forwards. */
export const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type Forwarded = (typeof FORWARDED)[number];

/**
 * Whether this process is in the foreground process group of its terminal: on Linux from
 * `/proc/self/stat` (its group and the terminal's foreground group), elsewhere whether stdin is a
 * terminal.
 */
export function inTerminalForeground(stat = '/proc/self/stat'): boolean {
  let text: string;
  try {
    text = readFileSync(stat, 'utf8');
  } catch {
    return process.stdin.isTTY === true;
  }
  // pid (comm) state ppid pgrp session tty_nr tpgid ...: comm may hold spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const group = Number(fields[2]);
  const foreground = Number(fields[5]);
  return foreground > 0 && foreground === group;
}

/** Whether record hands `signal` to the command (see the module comment). */
export function forwards(signal: Forwarded, foreground: boolean): boolean {
  return signal === 'SIGTERM' || !foreground;
}
