// The bare patch loop (ceiling.ts) as a process of its own, so that its CPU time is the loop's
// alone: run in the benchmark's process it was charged with the watch that times every contender,
// which decodes one event per removal, and the controller's figure is not.
// Credentials come from the environment (BENCH_SERVER, BENCH_CA_DATA in base64, BENCH_TOKEN),
// so that no kubeconfig loader is imported. Output: one JSON line, {"event":"done",...} with the
// CeilingResult, the CPU seconds spent from the first request to the last answer (the process's,
// and its main thread's, the one V8's profiler samples), and that window's ends on the monotonic
// clock in µs, the clock a .cpuprofile's times are on (bench/flame.ts cuts the profile to it).
import { parseArgs } from 'node:util';
import { ApiClient } from '../../src/kube/client.ts';
import { runCeiling } from './ceiling.ts';

const { values: flags } = parseArgs({
  options: {
    concurrency: { type: 'string' },
    namespace: { type: 'string' },
    'label-selector': { type: 'string' },
  },
});
const concurrency = Number(flags.concurrency);
const { BENCH_SERVER: server, BENCH_CA_DATA: caData, BENCH_TOKEN: token } = process.env;
if (!Number.isInteger(concurrency) || concurrency < 1 || !server || !caData || !token) {
  throw new Error('usage: BENCH_SERVER=… BENCH_CA_DATA=… BENCH_TOKEN=… ceiling-main.ts --concurrency N [--namespace NS] [--label-selector S]');
}

const headers = { Authorization: `Bearer ${token}` };
const client = new ApiClient({ server, tls: { ca: Buffer.from(caData, 'base64').toString('utf8') }, headers: async () => headers }, { maxSockets: concurrency, userAgent: 'bench-contender' });
const startedUs = Number(process.hrtime.bigint() / 1000n);
const start = process.cpuUsage();
const threadStart = process.threadCpuUsage();
const result = await runCeiling(client, flags.namespace ?? null, concurrency, flags['label-selector']);
const cpu = process.cpuUsage(start);
const thread = process.threadCpuUsage(threadStart);
const endedUs = Number(process.hrtime.bigint() / 1000n);
client.close();
const { removed, conflicts, requests, retries, writes } = result;
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
const mainThreadCpuSeconds = (thread.user + thread.system) / 1e6;
process.stdout.write(`${JSON.stringify({ event: 'done', removed, conflicts, requests, retries, writes, cpuSeconds, mainThreadCpuSeconds, startedUs, endedUs })}\n`);
