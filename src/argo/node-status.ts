// Argo's own record of a pod: its node in the Workflow as stored in the API server. Argo writes
// the Workflow (its status.nodes) before it releases any pod ("we never label pods as completed
// until we successfully updated the workflow", workflow/controller/operator.go), so a node that
// the stored Workflow shows fulfilled has been recorded, whatever Argo's own pod queue has got
// to. This file is pure: decoding the stored forms of the node map, and Argo's rule.
//
// The rule is Argo's NodePhase.Fulfilled(taskResultSynced) as of v3.7.1 (and v4), applied to
// every version: phase Succeeded, Failed or Error with taskResultSynced not false, or phase
// Skipped or Omitted (v3.6 and v3.7.0 test the phase alone; the stricter rule never frees a pod
// those versions would keep). A record, never a clock: nothing here counts time.

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

/** NodeState is what the rule needs of a node: fulfilled, or the phase it is in (with its sync). */
export type NodeState = { fulfilled: true; phase: string } | { fulfilled: false; phase: string; taskResultSynced: boolean | null };

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
  | { kind: 'not-fulfilled'; nodeId: string; phase: string; taskResultSynced: boolean | null }
  | { kind: 'missing'; nodeId: string }
  | { kind: 'offloaded' }
  | { kind: 'unreadable'; why: string };

const FULFILLED_WHEN_SYNCED = new Set(['Succeeded', 'Failed', 'Error']);
const FULFILLED_ALWAYS = new Set(['Skipped', 'Omitted']);

/** nodeState applies Argo's Fulfilled(taskResultSynced) to one node as stored. */
export function nodeState(node: { phase?: unknown; taskResultSynced?: unknown }): NodeState {
  const phase = typeof node.phase === 'string' ? node.phase : '';
  const taskResultSynced = typeof node.taskResultSynced === 'boolean' ? node.taskResultSynced : null;
  if (FULFILLED_ALWAYS.has(phase) || (FULFILLED_WHEN_SYNCED.has(phase) && taskResultSynced !== false)) return { fulfilled: true, phase };
  return { fulfilled: false, phase, taskResultSynced };
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
 * nodeIdOf is the pod's node ID as Argo finds it (operator.go, nodeID): the node-id annotation;
 * without it, the ID Argo derives from the node-name annotation (Workflow.NodeID: the Workflow's
 * name, or the name followed by the FNV-1a hash of the node name); without either, the pod's
 * name (pod names were node IDs before Argo's pod-name format v2).
 */
export function nodeIdOf(annotations: Readonly<Record<string, unknown>> | undefined, workflowName: string, podName: string): string {
  const id = annotations?.[NODE_ID_ANNOTATION];
  if (typeof id === 'string' && id !== '') return id;
  const nodeName = annotations?.[NODE_NAME_ANNOTATION];
  if (typeof nodeName === 'string' && nodeName !== '') return nodeName === workflowName ? workflowName : `${workflowName}-${fnv1a32(nodeName)}`;
  return podName;
}

/** nodeVerdict looks up one pod's node in a stored Workflow's node map. */
export function nodeVerdict(stored: StoredNodes, nodeId: string): NodeVerdict {
  if (stored.form === 'offloaded') return { kind: 'offloaded' };
  if (stored.form === 'unreadable') return { kind: 'unreadable', why: stored.why };
  const node = stored.nodes.get(nodeId);
  if (node === undefined) return { kind: 'missing', nodeId };
  return node.fulfilled ? { kind: 'fulfilled', nodeId, phase: node.phase } : { kind: 'not-fulfilled', nodeId, phase: node.phase, taskResultSynced: node.taskResultSynced };
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
