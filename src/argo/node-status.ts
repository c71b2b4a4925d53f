// Argo's own record of a pod: its node in the Workflow as stored in the API server. Argo writes
// the Workflow (its status.nodes) before it releases any pod ("we never label pods as completed
// until we successfully updated the workflow", workflow/controller/operator.go), so a node that
// the stored Workflow shows fulfilled has been recorded, whatever Argo's own pod queue has got
// to. This file is pure: decoding the stored forms of the node map, and Argo's rule.
//
// The rule is Argo's NodePhase.Fulfilled(taskResultSynced) as of v3.7.1 (and v4), applied to
// every version: phase Succeeded, Failed or Error with taskResultSynced not false, or phase
// Skipped or Omitted (v3.6 and v3.7.0 test the phase alone; the stricter rule never frees a pod
// those versions would keep). One exception, stricter than Argo: an Error that only says Argo lost
// sight of the pod (ARGO_POD_DELETED). A record, never a clock: nothing here counts time.

import { brotliDecompressSync, gunzipSync, zstdDecompressSync } from 'node:zlib';

export const NODE_ID_ANNOTATION = 'workflows.argoproj.io/node-id';
export const NODE_NAME_ANNOTATION = 'workflows.argoproj.io/node-name';

/**
 * MAX_COMPRESSED_CHARS bounds status.compressedNodes (base64): a Workflow is at most etcd's
 * request limit (1.5 MiB by default; Argo compresses past 1 MiB), so anything longer is not
 * Argo's. MAX_NODES_BYTES bounds what it may inflate to, and so the time and memory one
 * decoding takes (zlib stops at the limit).
 */
export const MAX_COMPRESSED_CHARS = 4 * 1024 * 1024;
export const MAX_NODES_BYTES = 32 * 1024 * 1024;

/**
 * NodeState is what the rule needs of a node: fulfilled, or the phase it is in (with its sync).
 * argoLostPod: the node is in Error only because Argo's informer lost the pod (ARGO_POD_DELETED).
 */
export type NodeState =
  | { fulfilled: true; phase: string }
  | { fulfilled: false; phase: string; taskResultSynced: boolean | null; argoLostPod?: true };

/** StoredNodes is the node map of a stored Workflow, in whichever form Argo left it. */
export type StoredNodes =
  | { form: 'nodes' | 'compressed'; nodes: ReadonlyMap<string, NodeState> }
  /** status.offloadNodeStatusVersion is set: the nodes are in Argo's database, not readable here. */
  | { form: 'offloaded' }
  /** Something in the status that cannot be read as Argo's nodes: no pod is freed on it. */
  | { form: 'unreadable'; why: string };

/** NodeVerdict is what the stored Workflow says of one pod's node. */
export type NodeVerdict =
  | { kind: 'fulfilled'; nodeId: string; phase: string }
  | { kind: 'not-fulfilled'; nodeId: string; phase: string; taskResultSynced: boolean | null; argoLostPod?: true }
  | { kind: 'missing'; nodeId: string }
  | { kind: 'offloaded' }
  | { kind: 'unreadable'; why: string };

const FULFILLED_WHEN_SYNCED = new Set(['Succeeded', 'Failed', 'Error']);
const FULFILLED_ALWAYS = new Set(['Skipped', 'Omitted']);

/**
 * ARGO_POD_DELETED is the message of a Pod node that Argo marked Error because the pod had been
 * missing from its own pod informer for more than 10 s (workflow/controller/operator.go,
 * podReconciliation: `woc.markNodeError(ctx, node.Name, argoerrors.New("", "pod deleted"))`;
 * markNodeError passes err.Error(), the message as given, to markNodePhase, which stores it as the
 * node's message). That records what Argo could not see, not the pod's result: a pod that holds
 * Argo's finalizer cannot have gone, and once Argo sees it again assessNodeStatus rewrites the
 * node from the pod. Argo's own record-based cleanup never frees it meanwhile: queuePodsForCleanup
 * (pod_cleanup.go) goes through the pods its informer holds, which this one is missing from. So
 * the node counts as not fulfilled. Its type is not checked: Argo writes this message only on Pod
 * nodes, and a pod's node is one. A node that Argo sets Succeeded from the pod it sees again may
 * keep the message (assessNodeStatus leaves it): only the phase Error makes it Argo's blind spot.
 */
export const ARGO_POD_DELETED = 'pod deleted';

/** nodeState applies Argo's Fulfilled(taskResultSynced) to one node as stored (and ARGO_POD_DELETED). */
export function nodeState(node: { phase?: unknown; taskResultSynced?: unknown; message?: unknown }): NodeState {
  const phase = typeof node.phase === 'string' ? node.phase : '';
  const taskResultSynced = syncOf(node.taskResultSynced);
  if (phase === 'Error' && node.message === ARGO_POD_DELETED) return { fulfilled: false, phase, taskResultSynced, argoLostPod: true };
  if (FULFILLED_ALWAYS.has(phase) || (FULFILLED_WHEN_SYNCED.has(phase) && taskResultSynced !== false)) return { fulfilled: true, phase };
  return { fulfilled: false, phase, taskResultSynced };
}

/**
 * syncOf reads taskResultSynced as Argo's *bool: absent or null is nil, which Fulfilled counts as
 * synced (`isSynced := synced == nil || *synced`, pkg/apis/workflow/v1alpha1/workflow_types.go).
 * Any other value that is not a boolean would not even decode in Argo: it never counts as synced.
 */
function syncOf(value: unknown): boolean | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'boolean' ? value : false;
}

/** storedNodes reads the node map of a Workflow's status: plain, compressed (gzip, zstd, brotli) or offloaded. */
export function storedNodes(status: unknown): StoredNodes {
  const s = isObject(status) ? status : {};
  const offloaded = s['offloadNodeStatusVersion'];
  if (typeof offloaded === 'string' && offloaded !== '') return { form: 'offloaded' };
  const plain = s['nodes'];
  const compressed = s['compressedNodes'];
  // As Argo's DecompressWorkflow: the compressed form counts only when no plain node is stored.
  const plainCount = isObject(plain) ? Object.keys(plain).length : 0;
  if (plainCount === 0 && typeof compressed === 'string' && compressed !== '') {
    let json: string;
    try {
      json = inflate(compressed);
    } catch (e) {
      return { form: 'unreadable', why: `status.compressedNodes: ${e instanceof Error ? e.message : String(e)}` };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return { form: 'unreadable', why: 'status.compressedNodes: not JSON once decompressed' };
    }
    return nodeMap(parsed, 'compressed');
  }
  if (plain !== undefined && plain !== null) return nodeMap(plain, 'nodes');
  // No nodes yet (a Workflow that has not started): every pod's node is missing.
  return { form: 'nodes', nodes: new Map() };
}

function nodeMap(value: unknown, form: 'nodes' | 'compressed'): StoredNodes {
  if (!isObject(value)) return { form: 'unreadable', why: `status.${form === 'nodes' ? 'nodes' : 'compressedNodes'}: not a map of nodes` };
  const nodes = new Map<string, NodeState>();
  for (const [id, node] of Object.entries(value)) if (isObject(node)) nodes.set(id, nodeState(node));
  return { form, nodes };
}

/**
 * inflate decodes compressedNodes as Argo's DecompressContent does: base64, then zstd or gzip by
 * their magic bytes, anything else brotli (which has none).
 */
function inflate(base64: string): string {
  if (base64.length > MAX_COMPRESSED_CHARS) throw new Error(`longer than ${MAX_COMPRESSED_CHARS} characters`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64)) throw new Error('not base64');
  const bytes = Buffer.from(base64, 'base64');
  const limit = { maxOutputLength: MAX_NODES_BYTES };
  const out =
    bytes[0] === 0x28 && bytes[1] === 0xb5 && bytes[2] === 0x2f && bytes[3] === 0xfd
      ? zstdDecompressSync(bytes, limit)
      : bytes[0] === 0x1f && bytes[1] === 0x8b
        ? gunzipSync(bytes, limit)
        : brotliDecompressSync(bytes, limit);
  return out.toString('utf8');
}

/**
 * nodeIdOf is the pod's node ID exactly as Argo finds it (workflow/controller/operator.go, nodeID):
 * the node-id annotation whenever the key is there, even empty; else Workflow.NodeID of the
 * node-name annotation, an absent one read as "" as Go reads a missing map key: the Workflow's
 * name if the node name is that, else the name, "-" and the FNV-1a hash of the node name. A pod
 * with neither annotation so looks for `<workflow>-2166136261` (the hash of ""), which is no
 * node's ID: it waits, as Argo leaves it. Annotations the API server returns are strings; any
 * other value is read as absent.
 */
export function nodeIdOf(annotations: Readonly<Record<string, unknown>> | undefined, workflowName: string): string {
  const id = annotations?.[NODE_ID_ANNOTATION];
  if (typeof id === 'string') return id;
  const nodeName = annotations?.[NODE_NAME_ANNOTATION];
  const name = typeof nodeName === 'string' ? nodeName : '';
  return name === workflowName ? workflowName : `${workflowName}-${fnv1a32(name)}`;
}

/** nodeVerdict looks up one pod's node in a stored Workflow's node map. */
export function nodeVerdict(stored: StoredNodes, nodeId: string): NodeVerdict {
  if (stored.form === 'offloaded') return { kind: 'offloaded' };
  if (stored.form === 'unreadable') return { kind: 'unreadable', why: stored.why };
  const node = stored.nodes.get(nodeId);
  if (node === undefined) return { kind: 'missing', nodeId };
  if (node.fulfilled) return { kind: 'fulfilled', nodeId, phase: node.phase };
  return { kind: 'not-fulfilled', nodeId, phase: node.phase, taskResultSynced: node.taskResultSynced, ...(node.argoLostPod === true ? { argoLostPod: true } : {}) };
}

/** fnv1a32 is FNV-1a, 32 bits, over the UTF-8 bytes, as Go's hash/fnv New32a. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(s, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
