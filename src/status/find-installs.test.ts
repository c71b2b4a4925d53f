import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findInstalls, imageName, isOurController, type Container, type Deployment } from './find-installs.ts';

const ARGO: Container = { name: 'workflow-controller', image: 'quay.io/argoproj/workflow-controller:v4.0.5', args: ['--configmap', 'workflow-controller-configmap'] };
const OURS: Container = { name: 'finalizer-sweeper', image: 'finalizer-sweeper:0.1.0', args: ['controller', '--config=/etc/finalizer-sweeper/finalizer-sweeper.yaml'] };

function deployment(name: string, containers: Container[]): Deployment {
  return { metadata: { namespace: 'argo', name }, spec: { template: { spec: { containers } } } };
}

test('isOurController: by container name or image name, running the controller', () => {
  const cases: [string, Container, boolean][] = [
    ['named finalizer-sweeper, controller', OURS, true],
    ['renamed, but our image', { ...OURS, name: 'cleanup', image: 'reg.example:5000/ops/finalizer-sweeper:0.1.0@sha256:abc' }, true],
    ['no args: the controller is the default command', { ...OURS, args: [] }, true],
    ['flags only: the default command', { ...OURS, args: ['--dry-run'] }, true],
    ['a one-shot sweep is no install', { ...OURS, args: ['sweep', '--dry-run'] }, false],
    ["Argo's container", ARGO, false],
    ['another image whose path mentions us', { name: 'x', image: 'finalizer-sweeper/other:1' }, false],
  ];
  for (const [name, c, want] of cases) assert.equal(isOurController(c), want, name);
});

test('imageName drops registry, path, tag and digest', () => {
  const cases: [string, string][] = [
    ['finalizer-sweeper', 'finalizer-sweeper'],
    ['finalizer-sweeper:0.1.0', 'finalizer-sweeper'],
    ['localhost:5000/finalizer-sweeper:0.1.0', 'finalizer-sweeper'],
    ['ghcr.io/org/finalizer-sweeper@sha256:00', 'finalizer-sweeper'],
    ['', ''],
  ];
  for (const [image, want] of cases) assert.equal(imageName(image), want, image);
});

test('findInstalls: beside Argo is a sidecar, alone is standalone, other Deployments are not installs', () => {
  const found = findInstalls([
    deployment('workflow-controller', [ARGO, OURS]),
    deployment('finalizer-sweeper', [OURS]),
    deployment('argo-server', [{ name: 'argo-server', image: 'quay.io/argoproj/argocli:v4.0.5' }]),
    { metadata: { name: 'empty' } },
  ]);
  assert.deepEqual(found.map((f) => [f.deployment, f.flavour, f.beside]), [
    ['workflow-controller', 'sidecar', ['workflow-controller']],
    ['finalizer-sweeper', 'standalone', []],
  ]);
});
