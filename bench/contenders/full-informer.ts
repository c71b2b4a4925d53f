// The full-object informer scenario 5 compares with: @kubernetes/client-node's own makeInformer
// on the same workflow pods, with nothing else in the process. Prints {"event":"synced"} once
// the informer has listed (and opened its watch), then holds its cache until SIGTERM.
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';

const SELECTOR = 'workflows.argoproj.io/workflow';

const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, namespace: { type: 'string' } } });
if (!values.kubeconfig || !values.namespace) throw new Error('usage: full-informer.ts --kubeconfig K --namespace NS');
const namespace = values.namespace;
const kc = new KubeConfig();
kc.loadFromFile(values.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const informer = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, () => core.listNamespacedPod({ namespace, labelSelector: SELECTOR }), SELECTOR);
process.once('SIGTERM', () => void informer.stop().finally(() => process.exit(0)));
await informer.start();
process.stdout.write(`${JSON.stringify({ event: 'synced', cachedPods: informer.list().length })}\n`);
// The cache must stay referenced (and the process alive) while the benchmark reads its RSS.
setInterval(() => informer.list().length, 60_000);
