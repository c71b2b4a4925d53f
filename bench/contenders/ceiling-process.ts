// runCeilingProcess runs the bare patch loop in a child process (ceiling-main.ts) and returns its
// counts and its own CPU time, for the scenarios that compare the controller's CPU with the loop's.
// `server` points it elsewhere than the API server itself (a byte-counting pipe).
import { fileURLToPath } from 'node:url';
import type { ControlPlane } from '../../src/testbed/control-plane.ts';
import { startNode } from '../lib/child.ts';
import type { CeilingResult } from './ceiling.ts';

const MAIN = fileURLToPath(new URL('./ceiling-main.ts', import.meta.url));

/**
 * CeilingProcessResult: the loop's counts, its CPU from its first request to its last answer (the
 * main thread's apart), that window's ends on the monotonic clock in µs, and the process's PID
 * (which names its .cpuprofile when BENCH_PROFILE_DIR is set).
 */
export type CeilingProcessResult = Omit<CeilingResult, 'patchMs'> & { cpuSeconds: number; mainThreadCpuSeconds: number; startedUs: number; endedUs: number; pid: number };

export async function runCeilingProcess(
  plane: ControlPlane,
  o: { context: string | undefined; concurrency: number; namespace?: string; labelSelector?: string; server?: string },
): Promise<CeilingProcessResult> {
  // No context: the admin, whom API Priority and Fairness exempts.
  const token = o.context === undefined ? plane.token : plane.serviceAccountTokens.get(o.context);
  if (token === undefined) throw new Error(`no service-account context ${o.context} in the test bed`);
  const args = ['--concurrency', String(o.concurrency)];
  if (o.namespace !== undefined) args.push('--namespace', o.namespace);
  if (o.labelSelector !== undefined) args.push('--label-selector', o.labelSelector);
  const child = startNode('ceiling', MAIN, args, { ...process.env, BENCH_SERVER: o.server ?? plane.server, BENCH_CA_DATA: plane.caData, BENCH_TOKEN: token });
  const how = await child.exited;
  const done = child.stdoutLines.map(parseDone).find((r) => r !== null);
  if (how !== 0 || done === undefined) throw new Error(`the bare loop exited (${how}) without its result:\n${child.tail()}`);
  return { ...done, pid: child.pid };
}

function parseDone(line: string): Omit<CeilingProcessResult, 'pid'> | null {
  try {
    const v = JSON.parse(line) as Partial<CeilingProcessResult> & { event?: string };
    return v.event === 'done' && typeof v.cpuSeconds === 'number' ? (v as CeilingProcessResult) : null;
  } catch {
    return null;
  }
}
