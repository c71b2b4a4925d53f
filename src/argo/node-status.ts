// Argo's own record of a pod: its node in the Workflow as stored in the API server. Argo writes
// the Workflow (its status.nodes) before it releases any pod ("we never label pods as completed
// until we successfully updated the workflow", workflow/controller/operator.go), so a node that
// the stored Workflow shows fulfilled has been recorded, whatever Argo's own pod queue has got
// to. This file reads the stored forms of the node map (the compressed one through
// compressed-nodes.ts, which keeps the event loop free) and applies Argo's rule, a pure function.
//
// The rule is Argo's NodePhase.Fulfilled(taskResultSynced) as of v3.7.1 (and v4), applied to
// every version: phase Succeeded, Failed or Error with taskResultSynced not false, or phase
// Skipped or Omitted (v3.6 and v3.7.0 test the phase alone; the stricter rule never frees a pod
// those versions would keep). One exception, stricter than Argo: an Error that only says Argo lost
// sight of the pod (ARGO_POD_DELETED). A record, never a clock: nothing here counts time.
//
// Field names: Argo decodes the compressed map with Go's encoding/json, which matches a key to a
// field case-insensitively (exact match preferred, then Unicode simple folding: `PHASE`, `Phase`
// and `phaſe` all set Phase) and lets the last key in the text win; the plain map reaches Argo
// through Kubernetes' decoders, which match exactly. A node counts as fulfilled only when every
// one of those readings agrees (nodeReading): where its fields are spelt several ways that could
// be read differently, it is not fulfilled, a conservative wait.

import { decodeCompressedNodes, MAX_NODES, type NodeReader } from './compressed-nodes.ts';

export const NODE_ID_ANNOTATION = 'workflows.argoproj.io/node-id';
export const NODE_NAME_ANNOTATION = 'workflows.argoproj.io/node-name';

/**
 * NodeState is what the rule needs of a node: fulfilled, or the phase it is in (with its sync).
 * argoLostPod: the node is in Error only because Argo's informer lost the pod (ARGO_POD_DELETED).
 */
export type NodeState =
  | { fulfilled: true; phase: string }
  | { fulfilled: false; phase: string; taskResultSynced: boolean | null; argoLostPod?: true; spellings?: true };

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
  /** spellings: a field of the node is spelt several ways that Argo's readers may read differently. */
  | { kind: 'not-fulfilled'; nodeId: string; phase: string; taskResultSynced: boolean | null; argoLostPod?: true; spellings?: true }
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
export function nodeState(node: Readonly<Record<string, unknown>>): NodeState {
  const reading = nodeReading();
  for (const key of Object.keys(node)) if (isField(key)) reading.member(key, node[key]);
  return reading.state();
}

/** FIELDS are the node's fields the rule reads, by their names folded as Go folds them. */
const FIELDS = ['phase', 'taskResultSynced', 'message'] as const;
type Field = (typeof FIELDS)[number];
/** The runes beyond ASCII that Go folds to an ASCII letter (see goFold). */
const FOLDED_TO_ASCII: Readonly<Record<string, string>> = { '\u0130': 'I', '\u0131': 'I', '\u017f': 'S', '\u212a': 'K' };
const BY_FOLDED = new Map<string, Field>(FIELDS.map((f) => [goFold(f), f]));
/** The type Argo's Go struct gives each field, as `typeof` names it. */
const TYPES: Readonly<Record<Field, string>> = { phase: 'string', taskResultSynced: 'boolean', message: 'string' };

/**
 * goFold folds a key as encoding/json does (foldName: ASCII upper case, any other rune
 * ToUpper(ToLower(r))), as far as it matters here: the only runes beyond ASCII that fold to an
 * ASCII letter are U+0130 and U+0131 (I), U+017F (S) and U+212A, the Kelvin sign (K), checked
 * against Go's unicode tables. Any other rune folds to no ASCII letter, so a key holding one is
 * no field of ours whatever it folds to.
 */
function goFold(key: string): string {
  let out = '';
  for (const c of key) {
    const code = c.charCodeAt(0);
    out += code >= 0x61 && code <= 0x7a ? String.fromCharCode(code - 0x20) : (FOLDED_TO_ASCII[c] ?? c);
  }
  return out;
}

/** isField: whether a key names one of FIELDS for Go (every rune of theirs is a single UTF-16 unit). */
export function isField(key: string): boolean {
  return (key.length === 5 || key.length === 7 || key.length === 16) && BY_FOLDED.has(goFold(key));
}

/**
 * NodeReading reads one node's fields from its members in the order written, as a NodeReader
 * (compressed nodes) or from an object (plain ones). Per field it keeps the exact key's last value
 * (what JSON.parse and Kubernetes read) and whether other spellings were met and all members
 * carried one value. A field is settled when no other spelling was met, or when the exact key
 * was met too and every member agreed: then Go's reading, whichever member it takes last, and the
 * exact one give the same value. Else JSON.parse's order cannot tell which one Go took (a key
 * written twice keeps its first place), nor can an object's, and the node is not fulfilled.
 * Objects and lists agree with nothing: no field of ours holds one. A value of the wrong type
 * (phase or message not a string, taskResultSynced not a boolean; null aside, which Go leaves
 * alone) fails Go's decoding of the whole map and Kubernetes' conversion of the Workflow, however
 * many times the field is written after it: Argo reads no record there, and neither do we.
 */
interface NodeReading extends NodeReader {
  state(): NodeState;
}

function nodeReading(): NodeReading {
  const exact: Partial<Record<Field, unknown>> = {};
  const first: Partial<Record<Field, unknown>> = {};
  const other = new Set<Field>();
  const disagree = new Set<Field>();
  let mistyped = false;
  return {
    member(key, value) {
      const f = BY_FOLDED.get(goFold(key));
      if (f === undefined || value === undefined) return; // undefined: no JSON value, the key absent
      if (value !== null && typeof value !== TYPES[f]) mistyped = true;
      if (key === f) exact[f] = value;
      else other.add(f);
      if (!(f in first)) first[f] = value;
      else if (!(first[f] === value && (typeof value !== 'object' || value === null))) disagree.add(f);
    },
    end() {},
    state() {
      const phase = typeof exact.phase === 'string' ? exact.phase : '';
      const taskResultSynced = syncOf(exact.taskResultSynced);
      const settled = FIELDS.every((f) => !other.has(f) || (f in exact && !disagree.has(f)));
      if (!settled) return shared({ fulfilled: false, phase, taskResultSynced, spellings: true });
      if (mistyped) return shared({ fulfilled: false, phase, taskResultSynced });
      if (phase === 'Error' && exact.message === ARGO_POD_DELETED) return shared({ fulfilled: false, phase, taskResultSynced, argoLostPod: true });
      if (FULFILLED_ALWAYS.has(phase) || (FULFILLED_WHEN_SYNCED.has(phase) && taskResultSynced !== false)) return shared({ fulfilled: true, phase });
      return shared({ fulfilled: false, phase, taskResultSynced });
    },
  };
}

// NodeStates are few (a handful of phases, three syncs) and a stored Workflow holds tens of
// thousands of nodes: one frozen object per state, not per node, keeps the maps of the reads
// kept (workflow-records.ts) small and the collector's pauses short. Bounded: a phase no Argo
// writes is simply not shared.
const MAX_SHARED = 64;
const states = new Map<string, NodeState>();

function shared(state: NodeState): NodeState {
  const key = state.fulfilled ? `+${state.phase}` : `${String(state.taskResultSynced)}${state.argoLostPod === true ? '!' : state.spellings === true ? '?' : '-'}${state.phase}`;
  const hit = states.get(key);
  if (hit !== undefined) return hit;
  const frozen = Object.freeze(state);
  if (states.size < MAX_SHARED) states.set(key, frozen);
  return frozen;
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

/**
 * storedNodes reads the node map of a Workflow's status: plain, compressed (gzip, zstd, brotli) or
 * offloaded. Compressed nodes are decoded without holding the event loop (compressed-nodes.ts).
 * Only the nodes in `wanted` are kept, when given (the pods waiting on this read ask for them);
 * a map of more than MAX_NODES nodes is unreadable in either form.
 */
export async function storedNodes(status: unknown, wanted?: ReadonlySet<string>): Promise<StoredNodes> {
  const s = isObject(status) ? status : {};
  const offloaded = s['offloadNodeStatusVersion'];
  if (typeof offloaded === 'string' && offloaded !== '') return { form: 'offloaded' };
  const plain = s['nodes'];
  const compressed = s['compressedNodes'];
  // As Argo's DecompressWorkflow: the compressed form counts only when no plain node is stored.
  const plainCount = isObject(plain) ? Object.keys(plain).length : 0;
  if (plainCount === 0 && typeof compressed === 'string' && compressed !== '') {
    const nodes = new Map<string, NodeState>();
    try {
      await decodeCompressedNodes(compressed, {
        node: (id) => {
          if (wanted !== undefined && !wanted.has(id)) return null;
          const reading = nodeReading();
          return {
            member: (key, value) => reading.member(key, value),
            end: (object) => (object ? nodes.set(id, reading.state()) : nodes.delete(id)),
          };
        },
        field: isField,
      });
    } catch (e) {
      return { form: 'unreadable', why: `status.compressedNodes: ${e instanceof Error ? e.message : String(e)}` };
    }
    return { form: 'compressed', nodes };
  }
  if (plainCount > MAX_NODES) return { form: 'unreadable', why: `status.nodes: more than ${MAX_NODES} nodes` };
  if (plain !== undefined && plain !== null) return nodeMap(plain, wanted);
  // No nodes yet (a Workflow that has not started): every pod's node is missing.
  return { form: 'nodes', nodes: new Map() };
}

function nodeMap(value: unknown, wanted: ReadonlySet<string> | undefined): StoredNodes {
  if (!isObject(value)) return { form: 'unreadable', why: 'status.nodes: not a map of nodes' };
  const nodes = new Map<string, NodeState>();
  for (const id of wanted ?? Object.keys(value)) {
    const node = Object.hasOwn(value, id) ? value[id] : undefined;
    if (isObject(node)) nodes.set(id, nodeState(node));
  }
  return { form: 'nodes', nodes };
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
  return {
    kind: 'not-fulfilled',
    nodeId,
    phase: node.phase,
    taskResultSynced: node.taskResultSynced,
    ...(node.argoLostPod === true ? { argoLostPod: true } : {}),
    ...(node.spellings === true ? { spellings: true } : {}),
  };
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
