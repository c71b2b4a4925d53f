// The reflector against the real control plane: paging, watching, resuming, relisting, riding
// out a cut connection, and what a cached pod costs in memory.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test, type TestContext } from 'node:test';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { Reflector, type ListerWatcher, type ReflectorHandlers } from '../../src/cache/reflector.ts';
import { PodStore } from '../../src/cache/store.ts';
import { toPodMeta } from '../../src/cache/trim.ts';
import { ARGO_CONVENTIONS, DEFAULTS } from '../../src/config/settings.ts';
import { ApiClient } from '../../src/kube/client.ts';
import { loadKubeConfig } from '../../src/kube/kubeconfig.ts';
import { MetadataApi, PODS } from '../../src/kube/metadata-api.ts';
import type { PodMeta } from '../../src/kube/objects.ts';
import { transportFromKubeConfig } from '../../src/kube/transport.ts';
import { ARGO_FINALIZER, newPod } from '../../src/testbed/fixtures.ts';
import { useTestCluster } from '../support/cluster.ts';

const { cluster, kubeconfigPath, newNamespace } = useTestCluster();
const transport = await transportFromKubeConfig(loadKubeConfig({ kubeconfig: kubeconfigPath, context: null }));
const client = new ApiClient(transport);
after(() => client.close());
const podsApi = new MetadataApi(client, PODS);
// As the controller trims them: owner references shared with the pods the store holds.
const trimPodInto = (store: PodStore) => (o: Parameters<typeof toPodMeta>[0]) => toPodMeta(o, { finalizer: ARGO_FINALIZER, conventions: ARGO_CONVENTIONS, owner: DEFAULTS.owner, owners: store });

/** CountingSource passes through to the API, counting lists and watches. */
class CountingSource implements ListerWatcher {
  lists = 0;
  watches = 0;
  onList: () => void = () => {};
  readonly #api: ListerWatcher;
  constructor(api: ListerWatcher) {
    this.#api = api;
  }
  list(...args: Parameters<ListerWatcher['list']>) {
    this.lists++;
    this.onList();
    return this.#api.list(...args);
  }
  watch(...args: Parameters<ListerWatcher['watch']>) {
    this.watches++;
    return this.#api.watch(...args);
  }
}

/** reflect runs a pod reflector over one namespace until the test ends, recording what it hears. */
function reflect(t: TestContext, namespace: string, opts: { source?: ListerWatcher; pageSize?: number; watchList?: boolean; watchTimeoutSeconds?: { min: number; max: number }; stallMarginMs?: number } = {}) {
  const seen: string[] = [];
  const why: string[] = [];
  const store = new PodStore();
  const handlers: ReflectorHandlers<PodMeta> = {
    onAdd: (p) => seen.push(`add ${p.name}`),
    onUpdate: (_o, p) => seen.push(`update ${p.name}`),
    onDelete: (p) => seen.push(`delete ${p.name}`),
    onSynced: () => seen.push('synced'),
  };
  const reflector = new Reflector<PodMeta>({
    resource: 'pods',
    source: opts.source ?? podsApi,
    namespaces: [namespace],
    pageSize: opts.pageSize ?? 500,
    // Paginated lists unless asked: watch-list.test.ts covers the streaming first sync.
    watchList: opts.watchList ?? false,
    trim: trimPodInto(store),
    store,
    handlers,
    backoff: { initialMs: 50, maxMs: 500 },
    observer: { restarted: (_r, w) => why.push(w), relisted: () => {}, event: () => {} },
    ...(opts.watchTimeoutSeconds ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
    ...(opts.stallMarginMs !== undefined ? { stallMarginMs: opts.stallMarginMs } : {}),
  });
  const ac = new AbortController();
  const done = reflector.run(ac.signal);
  t.after(async () => {
    ac.abort();
    await done;
  });
  return { reflector, store, seen, why };
}

function plainPods(namespace: string, names: string[]) {
  return names.map((name) => newPod({ namespace, name, finalizers: [] }));
}

test('a paged list delivers every pod exactly once, each page before the next is read', async (t) => {
  const ns = await newNamespace(t);
  const names = Array.from({ length: 25 }, (_, i) => `p-${String(i).padStart(2, '0')}`);
  await cluster.createPods(plainPods(ns, names));
  const source = new CountingSource(podsApi);
  const handedOutAtEachList: number[] = [];
  let seen: string[] = [];
  source.onList = () => handedOutAtEachList.push(seen.length);
  const r = reflect(t, ns, { source, pageSize: 10 });
  seen = r.seen;

  await cluster.waitFor(async () => r.reflector.hasSynced(), 30_000, 'the reflector to sync');

  assert.equal(source.lists, 3, '25 pods in pages of 10');
  assert.deepEqual(r.seen.slice(0, -1).sort(), names.map((n) => `add ${n}`));
  assert.equal(r.seen.at(-1), 'synced');
  assert.deepEqual(handedOutAtEachList, [0, 10, 20], 'each page is handed out before the next is read');
  assert.equal(r.store.size, 25);
});

test('the watch reports a pod added, changed and deleted', async (t) => {
  const ns = await newNamespace(t);
  const r = reflect(t, ns);
  await cluster.waitFor(async () => r.reflector.hasSynced(), 30_000, 'sync');

  await cluster.createPod(newPod({ namespace: ns, name: 'p', finalizers: [] }));
  await cluster.waitFor(async () => r.seen.includes('add p'), 30_000, 'the add');
  await cluster.patchPod(ns, 'p', { metadata: { labels: { 'workflows.argoproj.io/completed': 'true' } } });
  await cluster.waitFor(async () => r.seen.includes('update p'), 30_000, 'the update');
  assert.equal(r.store.get(`${ns}/p`)?.completedLabel, 'true');
  await cluster.deletePod(ns, 'p');
  await cluster.waitFor(async () => r.seen.includes('delete p'), 30_000, 'the delete');

  // Deleting sets deletionTimestamp first (an update), then the pod goes.
  assert.deepEqual(r.seen.slice(0, 3), ['synced', 'add p', 'update p']);
  assert.equal(r.seen.at(-1), 'delete p');
  assert.equal(r.store.size, 0);
});

test('a watch that the server ends at its timeout is resumed without a relist', async (t) => {
  const ns = await newNamespace(t);
  const source = new CountingSource(podsApi);
  const r = reflect(t, ns, { source, watchTimeoutSeconds: { min: 2, max: 2 } });
  await cluster.waitFor(async () => r.why.filter((w) => w === 'closed').length >= 2 || undefined, 30_000, 'two watches to time out');

  await cluster.createPod(newPod({ namespace: ns, name: 'after-resume', finalizers: [] }));
  await cluster.waitFor(async () => r.seen.includes('add after-resume'), 30_000, 'the pod created after the resumes');

  assert.equal(source.lists, 1);
  assert.ok(source.watches >= 3);
  assert.equal(r.reflector.relists, 0);
});

/**
 * Proxy forwards TCP to the API server and can cut every connection and refuse new ones, or
 * freeze: nothing more passes on the connections open now, nor on those opened until it thaws,
 * yet nothing is closed, as a half-dead network path or a hung load balancer behaves. Connections
 * opened while frozen are held too, so that a client that happens to reconnect at the moment of
 * the freeze meets the same silence.
 */
class Proxy {
  down = false;
  #frozen = false;
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  constructor(target: URL) {
    this.#server = net.createServer((inbound) => {
      if (this.down) return void inbound.destroy();
      if (this.#frozen) {
        this.#track(inbound);
        return void inbound.pause();
      }
      const outbound = net.connect(Number(target.port), target.hostname);
      this.#track(inbound);
      this.#track(outbound);
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
  }
  #track(s: net.Socket): void {
    this.#sockets.add(s);
    s.on('close', () => this.#sockets.delete(s));
    s.on('error', () => {});
  }
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `https://127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }
  cut(): void {
    for (const s of this.#sockets) s.destroy();
  }
  freeze(): void {
    this.#frozen = true;
    for (const s of this.#sockets) {
      s.unpipe();
      s.pause();
    }
  }
  /** thaw lets new connections pass again; those frozen stay frozen until their client gives up. */
  thaw(): void {
    this.#frozen = false;
  }
  close(): void {
    this.cut();
    this.#server.close();
  }
}

test('after the connection is cut and the server unreachable for a while, the reflector catches up on what it missed', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPods(plainPods(ns, ['stays', 'goes']));
  const proxy = new Proxy(new URL(transport.server));
  const proxied = new ApiClient({ ...transport, server: await proxy.listen() });
  t.after(() => {
    proxied.close();
    proxy.close();
  });
  const r = reflect(t, ns, { source: new MetadataApi(proxied, PODS) });
  await cluster.waitFor(async () => r.reflector.hasSynced(), 30_000, 'sync');

  proxy.down = true;
  proxy.cut();
  await cluster.createPod(newPod({ namespace: ns, name: 'arrives', finalizers: [] }));
  await cluster.deletePod(ns, 'goes');
  await cluster.waitFor(async () => r.why.length >= 3 || undefined, 30_000, 'a few failed attempts');
  assert.ok(!r.seen.includes('add arrives'));
  proxy.down = false;

  await cluster.waitFor(async () => (r.seen.includes('add arrives') && r.seen.includes('delete goes')) || undefined, 60_000, 'catching up');
  assert.deepEqual([...r.store.keys()].sort(), [`${ns}/arrives`, `${ns}/stays`]);
  assert.ok(r.why.every((w) => w === 'error'), `restarts: ${r.why.join(', ')}`);
  t.diagnostic(`restarts while unreachable: ${r.why.length}, relists: ${r.reflector.relists}`);
});

test('a watch stalled on a frozen connection is ended by the watchdog and resumed; nothing is missed', async (t) => {
  const ns = await newNamespace(t);
  await cluster.createPods(plainPods(ns, ['before']));
  const proxy = new Proxy(new URL(transport.server));
  const proxied = new ApiClient({ ...transport, server: await proxy.listen() });
  t.after(() => {
    proxied.close();
    proxy.close();
  });
  // The server ends each watch after 2 s; the watchdog gives it 1 s more before calling it stalled.
  const r = reflect(t, ns, { source: new MetadataApi(proxied, PODS), watchTimeoutSeconds: { min: 2, max: 2 }, stallMarginMs: 1_000 });
  await cluster.waitFor(async () => r.reflector.hasSynced(), 30_000, 'sync');

  proxy.freeze(); // the open watch hears nothing more, not even its end
  await cluster.createPod(newPod({ namespace: ns, name: 'during', finalizers: [] }));
  await cluster.waitFor(async () => r.why.includes('stalled') || undefined, 30_000, () => `the watchdog to end the stalled watch (restarts so far: ${r.why.join(', ') || 'none'})`);
  proxy.thaw();
  await cluster.waitFor(async () => r.seen.includes('add during') || undefined, 30_000, 'the pod created while the watch was stalled');
  await cluster.createPod(newPod({ namespace: ns, name: 'after', finalizers: [] }));
  await cluster.waitFor(async () => r.seen.includes('add after') || undefined, 30_000, 'the pod created after');
  assert.deepEqual([...r.store.keys()].sort(), [`${ns}/after`, `${ns}/before`, `${ns}/during`]);
});

/** createWorkflowPods creates `count` Argo-like pods, ten per Workflow; the server's answers are dropped here, not kept alive by the caller's frame. */
async function createWorkflowPods(ns: string, count: number): Promise<void> {
  const workflow = (i: number) => ({ name: `wf-${Math.floor(i / 10)}`, uid: `00000000-0000-4000-8000-${String(Math.floor(i / 10)).padStart(12, '0')}` });
  await cluster.createPods(
    Array.from({ length: count }, (_, i) => newPod({ namespace: ns, name: `${workflow(i).name}-pod-${i}`, workflow: workflow(i), fatEnvKB: 4 })),
    32,
  );
}

test('memory: a cached pod costs a few hundred bytes', async (t) => {
  const ns = await newNamespace(t);
  const count = 2000;
  await createWorkflowPods(ns, count);
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  const before = heap();
  const r = reflect(t, ns);
  await cluster.waitFor(async () => r.reflector.hasSynced(), 60_000, 'sync');
  const afterSync = heap();
  const perPod = Math.round((afterSync - before) / count);
  t.diagnostic(`heap per cached pod (PodMeta, store entry, owner index), ${count} Argo-like pods: ${perPod} B`);
  assert.equal(r.store.size, count);
  assert.equal(r.store.ownerCount, count / 10);
  assert.ok(perPod < 2048, `${perPod} B per pod`);
});
