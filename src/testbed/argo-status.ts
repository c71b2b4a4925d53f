// Workflow statuses shaped as Argo writes them (pkg/apis/workflow/v1alpha1: NodeStatus, and
// workflow/packer for the compressed form), for the unit and integration tests of the node-status
// rule. Written from Argo's types, not copied from its fixtures.
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';

/** ArgoNode is one entry of status.nodes, with the fields Argo sets that matter here. */
export interface ArgoNode {
  id: string;
  name: string;
  displayName?: string;
  type: 'Steps' | 'StepGroup' | 'DAG' | 'Pod' | 'Retry' | 'Skipped' | 'Suspend';
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Error' | 'Skipped' | 'Omitted';
  taskResultSynced?: boolean;
  /** Argo's word on the node, e.g. "pod deleted" when its informer lost the pod. */
  message?: string;
  daemoned?: boolean;
  children?: string[];
  boundaryID?: string;
}

/** StatusForm is how the node map is stored: Argo's plain map, compressed three ways, or offloaded to its database. */
export type StatusForm = 'plain' | 'gzip' | 'zstd' | 'brotli' | 'offloaded';

export const STATUS_FORMS: readonly StatusForm[] = ['plain', 'gzip', 'zstd', 'brotli', 'offloaded'];

/** workflowStatus stores `nodes` in `form`, as Argo's persistUpdates leaves a running Workflow's status. */
export function workflowStatus(nodes: ArgoNode[], form: StatusForm, phase = 'Running'): Record<string, unknown> {
  const map = Object.fromEntries(nodes.map((n) => [n.id, { startedAt: '2026-11-26T10:00:00Z', displayName: n.name.split('.').at(-1), templateName: 'main', ...n }]));
  const base = { phase, startedAt: '2026-11-26T10:00:00Z', progress: `${nodes.filter((n) => n.phase === 'Succeeded').length}/${nodes.length}` };
  if (form === 'plain') return { ...base, nodes: map };
  if (form === 'offloaded') return { ...base, offloadNodeStatusVersion: 'fnv:1234567890' };
  const json = Buffer.from(JSON.stringify(map));
  const packed = form === 'gzip' ? gzipSync(json) : form === 'zstd' ? zstdCompressSync(json) : brotliCompressSync(json);
  return { ...base, compressedNodes: packed.toString('base64') };
}
