// restrictedV2Violations reads a pod spec as OpenShift's restricted-v2 SecurityContextConstraints
// admits one, rule by rule as the SCC is written (openshift/cluster-kube-apiserver-operator,
// bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml), for
// manifests rendered before any namespace exists. Where the SCC takes a value from the namespace
// (the UID range, the fsGroup range and the SELinux level in its openshift.io/sa.scc.*
// annotations), no fixed value can be right for every namespace, so any is a violation; where the
// SCC fills in a default when the field is unset (runAsUser, fsGroup, seLinuxOptions, the seccomp
// profile, allowPrivilegeEscalation, the dropped capabilities), unset is admissible.

/** The parts of a pod spec the SCC reads. */
export interface PodSpecLike {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: Record<string, unknown>;
  volumes?: Array<Record<string, unknown>>;
  initContainers?: ContainerLike[];
  containers: ContainerLike[];
}

export interface ContainerLike {
  name: string;
  securityContext?: Record<string, unknown>;
  ports?: Array<{ hostPort?: number }>;
}

/** VOLUMES are restricted-v2's `volumes`. */
const VOLUMES = ['configMap', 'downwardAPI', 'emptyDir', 'persistentVolumeClaim', 'projected', 'secret'];
/** ALLOWED_CAPABILITIES are its `allowedCapabilities`; `requiredDropCapabilities: [ALL]` is added by the SCC itself. */
const ALLOWED_CAPABILITIES = ['NET_BIND_SERVICE'];
/** SECCOMP is its `seccompProfiles: [runtime/default]`, in the securityContext field's words. */
const SECCOMP = 'RuntimeDefault';

export function restrictedV2Violations(spec: PodSpecLike): string[] {
  const found: string[] = [];
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[host] === true) found.push(`pod: ${host} (allowHost* false)`);
  }
  for (const volume of spec.volumes ?? []) {
    const kind = Object.keys(volume).find((k) => k !== 'name') ?? '(none)';
    if (!VOLUMES.includes(kind)) found.push(`volume ${String(volume['name'])}: ${kind} is not among ${VOLUMES.join(', ')}`);
  }
  const pod = spec.securityContext ?? {};
  found.push(...namespaceValues('pod', pod, ['runAsUser', 'fsGroup', 'seLinuxOptions']));
  found.push(...seccomp('pod', pod));
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const where = `container ${c.name}`;
    const sc = c.securityContext ?? {};
    found.push(...namespaceValues(where, sc, ['runAsUser', 'seLinuxOptions']));
    found.push(...seccomp(where, sc));
    if (sc['privileged'] === true) found.push(`${where}: privileged (allowPrivilegedContainer false)`);
    if (sc['allowPrivilegeEscalation'] === true) found.push(`${where}: allowPrivilegeEscalation (false in the SCC)`);
    const added = ((sc['capabilities'] as { add?: string[] } | undefined)?.add ?? []).filter((cap) => !ALLOWED_CAPABILITIES.includes(cap));
    if (added.length > 0) found.push(`${where}: adds ${added.join(', ')} (allowedCapabilities ${ALLOWED_CAPABILITIES.join(', ')})`);
    if ((c.ports ?? []).some((p) => p.hostPort !== undefined)) found.push(`${where}: a hostPort (allowHostPorts false)`);
  }
  return found;
}

/** namespaceValues flags fields whose only admissible values the namespace's annotations decide (MustRunAsRange, MustRunAs). */
function namespaceValues(where: string, sc: Record<string, unknown>, fields: string[]): string[] {
  return fields.filter((f) => sc[f] !== undefined).map((f) => `${where}: ${f} ${JSON.stringify(sc[f])} is fixed, but the SCC allows only the namespace's`);
}

function seccomp(where: string, sc: Record<string, unknown>): string[] {
  const type = (sc['seccompProfile'] as { type?: string } | undefined)?.type;
  return type === undefined || type === SECCOMP ? [] : [`${where}: seccompProfile ${type} (only ${SECCOMP})`];
}
