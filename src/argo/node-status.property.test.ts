// Property-based tests of the node rule against a model of how Argo reads a stored Workflow
// (docs/testing.md, "Property-based tests"). Statuses are generated plain, compressed (gzip, zstd,
// brotli) and offloaded, and for the adversarial properties as raw JSON text: duplicate keys,
// field names in other cases (Go's encoding/json matches them, Unicode folds included), wrong
// types, empty and huge strings, and statuses that are not Argo's at all. The safety property is
// one-sided: a node read as fulfilled here must be fulfilled as Argo reads it (we may wait where
// Argo would free, never free where Argo would wait).
//
// How Argo reads it, the model below:
//   - status.nodes arrives through the Kubernetes API as an object and is converted field by field
//     with the exact JSON names (apimachinery's unstructured converter), so case variants there are
//     other fields; status.compressedNodes is decompressed and decoded with Go's encoding/json
//     (workflow/packer), which matches a key to a field case-insensitively (bytes.EqualFold) and
//     lets the last occurrence of a field or of a node ID win;
//   - a phase of the wrong type, or a taskResultSynced of the wrong type where the phase makes the
//     rule read it, fails the decoding: Argo cannot read that Workflow and frees none of its pods;
//     a JSON null leaves a string as it was and sets the *bool to nil;
//   - an offloaded status (offloadNodeStatusVersion set) is not readable here; the compressed form
//     counts only when no plain node is stored (DecompressWorkflow), and compressed nodes that do
//     not decode, or a node map that is not an object, free nothing;
//   - the rule: Fulfilled(taskResultSynced), and our one stricter exception, an Error whose
//     message is "pod deleted" (node-status.ts, ARGO_POD_DELETED).
// Wrong types elsewhere (another node that is no object, a node's children, a taskResultSynced
// the phase does not need, a status field such as offloadNodeStatusVersion that is no string)
// also fail Argo's decoding of the whole Workflow; the rule deliberately reads only what it
// needs, and a writer who can put them there can as well write the node Succeeded, so the model
// reads such a field as absent, as node-status.ts does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliCompressSync, constants, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { ARGO_POD_DELETED, nodeVerdict, storedNodes } from './node-status.ts';
import { STATUS_FORMS, workflowStatus, type ArgoNode } from '../testbed/argo-status.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A node as JSON text sees it: its members in order, duplicates and all, or a value that is no object. */
type RawNode = { members: Array<[string, Json]> } | { value: Json };
/** A node map as text: node IDs in order, duplicates and all. */
type RawMap = Array<[string, RawNode]>;

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'];
const FIELDS = ['phase', 'taskResultSynced', 'message'] as const;
type Field = (typeof FIELDS)[number];

// --- The model of Argo's reading ---------------------------------------------------------------

/** goFold is Go's foldName: strings that fold alike are equal under bytes.EqualFold. */
function goFold(s: string): string {
  let out = '';
  for (const c of s) out += c.codePointAt(0)! < 0x80 ? c.toUpperCase() : c.toLowerCase().toUpperCase();
  return out;
}

const FOLDED = new Map(FIELDS.map((f) => [goFold(f), f]));

interface GoNode {
  phase: string;
  message: string;
  sync: boolean | null;
  /** The phase, or taskResultSynced, had a value of the wrong type: the decoding fails if the rule needs it. */
  phaseMistyped: boolean;
  syncMistyped: boolean;
}

/** goNode reads a node's members as Go reads them into NodeStatus (caseInsensitive: encoding/json; else the exact names). */
function goNode(node: RawNode, caseInsensitive: boolean): GoNode | 'unreadable' {
  const n: GoNode = { phase: '', message: '', sync: null, phaseMistyped: false, syncMistyped: false };
  // null decodes to a zero NodeStatus; anything else that is not an object fails the decoding.
  if ('value' in node && !isObject(node.value)) return node.value === null ? n : 'unreadable';
  const members = 'value' in node ? Object.entries(node.value as Record<string, Json>) : node.members;
  for (const [key, value] of members) {
    const field: Field | undefined = caseInsensitive ? FOLDED.get(goFold(key)) : (FIELDS as readonly string[]).includes(key) ? (key as Field) : undefined;
    if (field === undefined) continue;
    if (field === 'taskResultSynced') {
      if (value === null || typeof value === 'boolean') n.sync = value;
      else n.syncMistyped = true;
    } else if (value !== null) {
      if (typeof value !== 'string') {
        if (field === 'phase') n.phaseMistyped = true;
      } else if (field === 'phase') n.phase = value;
      else n.message = value;
    }
  }
  return n;
}

/**
 * repeatsMistyped: a field the rule reads is written more than once, once with a value of the
 * wrong type. Go's decoding fails on that occurrence (or, for the message, keeps the value before
 * it), where JSON.parse keeps the last: left to the case-insensitive property below.
 */
function repeatsMistyped(members: Array<[string, Json]>): boolean {
  return FIELDS.some((field) => {
    const values = members.filter(([k]) => k === field).map(([, v]) => v);
    const typed = (v: Json) => v === null || typeof v === (field === 'taskResultSynced' ? 'boolean' : 'string');
    return values.length > 1 && !values.every(typed);
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** asReceived is a plain node map as the API server hands it over: JSON.parse's object, a repeated key's last value standing. */
function asReceived(map: RawMap): RawMap {
  const parsed = JSON.parse(text(map)) as Record<string, Json>;
  return Object.entries(parsed).map(([id, value]) => [id, { value }]);
}

/** argoFrees: as Argo reads the node map, the node `id` is recorded (and not our ARGO_POD_DELETED exception). */
function argoFrees(map: RawMap, id: string, caseInsensitive: boolean): boolean {
  let last: RawNode | undefined;
  for (const [nodeId, node] of map) if (nodeId === id) last = node;
  if (last === undefined) return false;
  const n = goNode(last, caseInsensitive);
  if (n === 'unreadable' || n.phaseMistyped) return false;
  if (n.phase === 'Error' && n.message === ARGO_POD_DELETED) return false;
  return n.phase === 'Skipped' || n.phase === 'Omitted' || (['Succeeded', 'Failed', 'Error'].includes(n.phase) && !n.syncMistyped && n.sync !== false);
}

// --- Generators --------------------------------------------------------------------------------

/** A field name as Argo writes it, or in other cases, with Go's Unicode folds (ſ for s, the Kelvin sign for k), or a near miss. */
function spelling(field: Field): fc.Arbitrary<string> {
  const variant = fc.array(fc.nat(3), { minLength: field.length, maxLength: field.length }).map((picks) =>
    [...field]
      .map((c, i) => {
        const pick = picks[i]!;
        if (pick === 3 && c.toLowerCase() === 's') return 'ſ';
        if (pick === 3 && c.toLowerCase() === 'k') return '\u212A';
        return pick % 2 === 1 ? c.toUpperCase() : c.toLowerCase();
      })
      .join(''),
  );
  return fc.oneof({ weight: 3, arbitrary: fc.constant(field) }, { weight: 3, arbitrary: variant }, { weight: 1, arbitrary: fc.constantFrom(`${field} `, `_${field}`, `${field}s`) });
}

/** Huge strings, one past the decoder's slice (SLICE_CHARS), rarely: they cost compression time. */
const huge = fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('x'.repeat(300_000), `Succeeded${' '.repeat(1_000)}`) });
const oddValue: fc.Arbitrary<Json> = fc.oneof(fc.constant(null), fc.integer(), fc.boolean(), fc.string({ maxLength: 8 }), fc.constantFrom<Json>([], {}, ['Succeeded'], { phase: 'Succeeded' }));

const member: fc.Arbitrary<[string, Json]> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(spelling('phase'), fc.oneof({ weight: 6, arbitrary: fc.constantFrom<Json>(...PHASES, 'succeeded', 'SUCCEEDED', '') }, { weight: 1, arbitrary: oddValue })) },
  { weight: 3, arbitrary: fc.tuple(spelling('taskResultSynced'), fc.oneof({ weight: 6, arbitrary: fc.constantFrom<Json>(true, false, null) }, { weight: 1, arbitrary: oddValue })) },
  { weight: 2, arbitrary: fc.tuple(spelling('message'), fc.oneof({ weight: 4, arbitrary: fc.constantFrom<Json>(ARGO_POD_DELETED, 'Pod Deleted', '', 'OOMKilled') }, { weight: 1, arbitrary: oddValue })) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('id', 'name', 'type', 'children', 'outputs', ''), oddValue) },
);

const nodeId = fc.constantFrom('wf', 'wf-1', 'wf-2', 'wf-3', '', '__proto__', 'constructor', 'é✓');

const rawNode: fc.Arbitrary<RawNode> = fc.oneof(
  { weight: 12, arbitrary: fc.array(member, { maxLength: 6 }).map((members) => ({ members })) },
  { weight: 1, arbitrary: oddValue.map((value) => ({ value })) },
);

const rawMap: fc.Arbitrary<RawMap> = fc.array(fc.tuple(nodeId, rawNode), { maxLength: 6 });

/** text writes the map as JSON text, keeping every duplicate. */
function text(map: RawMap): string {
  const node = (n: RawNode) => ('value' in n ? JSON.stringify(n.value) : `{${n.members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`);
  return `{${map.map(([id, n]) => `${JSON.stringify(id)}:${node(n)}`).join(',')}}`;
}

const compressions = {
  gzip: (s: string) => gzipSync(s).toString('base64'),
  zstd: (s: string) => zstdCompressSync(s).toString('base64'),
  // A low quality: brotli's default takes long on the huge strings, and any quality decodes alike.
  brotli: (s: string) => brotliCompressSync(s, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }).toString('base64'),
};
const compression = fc.constantFrom(...(Object.keys(compressions) as Array<keyof typeof compressions>));

async function freed(status: unknown, id: string): Promise<boolean> {
  return nodeVerdict(await storedNodes(status), id).kind === 'fulfilled';
}

// --- Properties --------------------------------------------------------------------------------

test('property: Argo\'s own writes, in every stored form: a node is read as fulfilled exactly when Argo\'s rule says so', async () => {
  const argoNode: fc.Arbitrary<ArgoNode> = fc.record(
    {
      id: fc.constantFrom('wf', 'wf-1', 'wf-2', 'wf-3', 'wf-4'),
      name: fc.constant('wf.step'),
      type: fc.constantFrom('Pod', 'Retry', 'Steps'),
      phase: fc.constantFrom('Pending', 'Running', 'Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'),
      taskResultSynced: fc.boolean(),
      message: fc.constantFrom(ARGO_POD_DELETED, 'OOMKilled'),
    },
    { requiredKeys: ['id', 'name', 'type'], noNullPrototype: true },
  );
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(argoNode, { selector: (n) => n.id, maxLength: 5 }), fc.constantFrom(...STATUS_FORMS), nodeId, async (nodes, form, id) => {
      const got = nodeVerdict(await storedNodes(workflowStatus(nodes, form)), id);
      if (form === 'offloaded') return assert.equal(got.kind, 'offloaded');
      const map: RawMap = nodes.map((n) => [n.id, { members: Object.entries(n) as Array<[string, Json]> }]);
      assert.equal(got.kind === 'fulfilled', argoFrees(map, id, form !== 'plain'), `${form}: ${JSON.stringify(nodes)} node ${id}`);
    }),
    { numRuns: 200 },
  );
});

test('property: odd and hostile plain node maps (duplicates, wrong types, other fields, not objects) never free a node Argo would not', async () => {
  await fc.assert(
    fc.asyncProperty(rawMap, nodeId, async (map, id) => {
      // The API server hands the status over as an object: a repeated key's last value stands.
      const nodes = JSON.parse(text(map)) as unknown;
      if (await freed({ nodes }, id)) assert.ok(argoFrees(asReceived(map), id, false), `freed ${id} of ${text(map)}`);
    }),
    { numRuns: 400 },
  );
});

test('property: odd and hostile compressed node maps with exact field names (duplicate keys and nodes, wrong types, huge strings) never free a node Argo would not', async () => {
  const exact = exactNames(rawMap);
  await fc.assert(
    fc.asyncProperty(exact, nodeId, compression, huge, async (map, id, how, pad) => {
      // A huge string in a node of its own: the decoder reads the map in slices around it.
      const all: RawMap = pad === null ? map : [['huge', { members: [['message', pad]] }], ...map];
      if (await freed({ compressedNodes: compressions[how](text(all)) }, id)) assert.ok(argoFrees(all, id, true), `freed ${id} of ${text(map)} (${how})`);
    }),
    { numRuns: 300 },
  );
});

// Argo decodes compressed nodes with Go's encoding/json, which reads `PHASE`, `Phase` or `phaſe`
// as `phase` and lets the last occurrence win, and fails the decoding on a repeated field's
// mistyped occurrence, where JSON.parse keeps the last (`{"phase":{},"phase":"Error"}`).
test('property: compressed nodes with field names in any case (Go\'s case-insensitive decoding) never free a node Argo would not', async () => {
  await fc.assert(
    fc.asyncProperty(rawMap, nodeId, compression, async (map, id, how) => {
      if (await freed({ compressedNodes: compressions[how](text(map)) }, id)) assert.ok(argoFrees(map, id, true), `freed ${id} of ${text(map)} (${how})`);
    }),
    { numRuns: 400 },
  );
});

test('property: whole statuses, plain, compressed, both, offloaded, odd or undecodable, never free a node Argo would not', async () => {
  const undecodable = ['not base64!', 'AAAA', gzipSync('{"wf":{"phase":"Succeeded"}').toString('base64'), gzipSync('[{"phase":"Succeeded"}]').toString('base64'), gzipSync('{"wf":{"phase":"Succeeded"}}').toString('base64').slice(0, 20)];
  const compressed: fc.Arbitrary<{ json: Json; map: RawMap | 'undecodable' | null }> = fc.oneof(
    fc.tuple(exactNames(rawMap), compression).map(([map, how]) => ({ json: compressions[how](text(map)), map })),
    fc.constantFrom(...undecodable).map((json) => ({ json, map: 'undecodable' as const })),
    oddValue.map((json) => ({ json, map: null })),
  );
  const spec = fc.record(
    {
      nodes: fc.oneof(rawMap.map((m) => JSON.parse(text(m)) as Json), oddValue),
      compressed,
      offloadNodeStatusVersion: fc.oneof(fc.constantFrom('', 'fnv:1'), oddValue),
    },
    { requiredKeys: [], noNullPrototype: true },
  );
  await fc.assert(
    fc.asyncProperty(fc.oneof({ weight: 9, arbitrary: spec }, { weight: 1, arbitrary: oddValue.map((odd) => ({ odd })) }), nodeId, async (sp, id) => {
      const status = 'odd' in sp ? sp.odd : statusOf(sp);
      if (await freed(status, id)) assert.ok('odd' in sp ? false : argoFreesStatus(sp, id), `freed ${id} of ${JSON.stringify(status).slice(0, 300)}`);
    }),
    { numRuns: 300 },
  );
});

type StatusSpec = { nodes?: Json; compressed?: { json: Json; map: RawMap | 'undecodable' | null }; offloadNodeStatusVersion?: Json };

function statusOf(spec: StatusSpec): Json {
  const { compressed, ...rest } = spec;
  return (compressed === undefined ? rest : { ...rest, compressedNodes: compressed.json }) as Json;
}

/** argoFreesStatus: as Argo reads the status (DecompressWorkflow, then the rule), the node `id` is recorded. */
function argoFreesStatus(s: StatusSpec, id: string): boolean {
  if (typeof s.offloadNodeStatusVersion === 'string' && s.offloadNodeStatusVersion !== '') return false;
  const plain: RawMap | null = isObject(s.nodes) ? Object.entries(s.nodes).map(([nodeId, value]) => [nodeId, { value }]) : null;
  const c = s.compressed;
  if ((plain?.length ?? 0) === 0 && c !== undefined && typeof c.json === 'string' && c.json !== '') return c.map !== 'undecodable' && c.map !== null && argoFrees(c.map, id, true);
  return plain !== null && argoFrees(plain, id, false);
}

/** exactNames keeps the maps whose fields the rule reads are spelt exactly and written once where mistyped (what the case-insensitive property covers). */
function exactNames(maps: fc.Arbitrary<RawMap>): fc.Arbitrary<RawMap> {
  return maps.filter((map) => map.every(([, n]) => !('members' in n) || (n.members.every(([k]) => !FOLDED.has(goFold(k)) || (FIELDS as readonly string[]).includes(k)) && !repeatsMistyped(n.members))));
}
