import { spawn, execFileSync } from 'node:child_process';
import { startControlPlane } from './src/testbed/control-plane.ts';
import { Cluster } from './src/testbed/cluster.ts';
import { newPod, newWorkflow } from './src/testbed/fixtures.ts';

const cp = await startControlPlane();
const cluster = Cluster.fromKubeconfig(cp.kubeconfigPath);
try {
  await cluster.createNamespace('demo');
  const wf = await cluster.createWorkflow(newWorkflow({ namespace: 'demo', name: 'hello-x7k2p', completed: true }));
  await cluster.createPods(Array.from({ length: 12 }, (_, i) => newPod({ namespace: 'demo', name: `hello-x7k2p-${i}`, workflow: { name: 'hello-x7k2p', uid: wf.metadata.uid as string }, completed: true })));
  const ctl = spawn(process.execPath, ['src/cli.ts', 'controller', '--kubeconfig', cp.kubeconfigPath, '--leader-elect=false', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 8000));
  ctl.kill('SIGTERM');
  await new Promise((r) => ctl.on('exit', r));
  process.stdout.write(execFileSync('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'describe', 'workflows.argoproj.io', 'hello-x7k2p', '-n', 'demo'], { encoding: 'utf8' }).split('Events:')[1] ?? 'no events');
  process.stdout.write(execFileSync('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'get', 'events', '-n', 'demo'], { encoding: 'utf8' }));
} finally {
  cluster.close();
  await cp.stop();
}
