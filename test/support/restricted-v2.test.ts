import { test } from 'node:test';
import assert from 'node:assert/strict';
import { restrictedV2Violations, type ContainerLike, type PodSpecLike } from './restricted-v2.ts';

const container = (securityContext: Record<string, unknown> = {}, extra: Partial<ContainerLike> = {}): ContainerLike => ({ name: 'c', securityContext, ...extra });
const pod = (over: Partial<PodSpecLike> = {}): PodSpecLike => ({ containers: [container()], ...over });

test('restricted-v2 admits a pod that leaves the namespace\'s values unset, and refuses each thing it forbids', () => {
  const cases: Array<[string, PodSpecLike, number]> = [
    ['nothing set', pod(), 0],
    ['what our manifests set but the UID and GID', pod({
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' }, supplementalGroups: [5] },
      volumes: [{ name: 'a', configMap: { name: 'x' } }, { name: 'b', emptyDir: {} }, { name: 'c', projected: {} }],
      containers: [container({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] }, seccompProfile: { type: 'RuntimeDefault' } }, { ports: [{}] })],
    }), 0],
    ['a container runAsUser', pod({ containers: [container({ runAsUser: 65532 })] }), 1],
    ['a pod runAsUser', pod({ securityContext: { runAsUser: 1000 } }), 1],
    ['a pod fsGroup', pod({ securityContext: { fsGroup: 65532 } }), 1],
    ['a pod seLinuxOptions', pod({ securityContext: { seLinuxOptions: { level: 's0:c1,c2' } } }), 1],
    ['a container seLinuxOptions', pod({ containers: [container({ seLinuxOptions: { type: 'spc_t' } })] }), 1],
    ['an init container runAsUser', pod({ initContainers: [container({ runAsUser: 0 })] }), 1],
    ['seccomp Unconfined', pod({ containers: [container({ seccompProfile: { type: 'Unconfined' } })] }), 1],
    ['seccomp Localhost on the pod', pod({ securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'x.json' } } }), 1],
    ['privileged', pod({ containers: [container({ privileged: true })] }), 1],
    ['privilege escalation', pod({ containers: [container({ allowPrivilegeEscalation: true })] }), 1],
    ['a capability added', pod({ containers: [container({ capabilities: { add: ['SYS_ADMIN', 'NET_BIND_SERVICE'] } })] }), 1],
    ['a hostPort', pod({ containers: [container({}, { ports: [{ hostPort: 80 }] })] }), 1],
    ['hostNetwork and hostPID', pod({ hostNetwork: true, hostPID: true }), 2],
    ['a hostPath volume', pod({ volumes: [{ name: 'h', hostPath: { path: '/' } }] }), 1],
    ['a csi volume (not in restricted-v2\'s list)', pod({ volumes: [{ name: 'v', csi: { driver: 'x' } }] }), 1],
  ];
  for (const [what, spec, want] of cases) assert.equal(restrictedV2Violations(spec).length, want, `${what}: ${restrictedV2Violations(spec).join('; ')}`);
});
