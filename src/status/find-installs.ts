// Which Deployments run the sweeper, and how: every install route puts our container in a
// Deployment's pod template (deploy/: sidecar and sidecar-patch in Argo's workflow-controller,
// the Helm fragment in the chart's controller.extraContainers, standalone and namespaced in a
// Deployment of their own). The container is ours when it is named finalizer-sweeper, as every
// route names it, or runs an image of that name; it is the controller when its first argument
// is `controller`, or there is no subcommand (the CLI's default).

/** EnvVar is a container's environment entry, as the Deployment holds it. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; [source: string]: unknown };
}

export interface Container {
  name: string;
  image?: string;
  args?: string[];
  command?: string[];
  env?: EnvVar[];
  envFrom?: unknown[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[];
}

export interface Volume {
  name: string;
  configMap?: { name: string; items?: { key: string; path: string }[] };
}

/** Deployment is the part of an apps/v1 Deployment that status reads. */
export interface Deployment {
  metadata: { namespace?: string; name: string };
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
    template?: { spec?: { containers?: Container[]; volumes?: Volume[]; serviceAccountName?: string } };
  };
  status?: { replicas?: number; readyReplicas?: number; availableReplicas?: number; updatedReplicas?: number };
}

/** Flavour is how the container is deployed: beside Argo's controller, or alone. */
export type Flavour = 'sidecar' | 'standalone';

/** FoundInstall is one Deployment running our controller. */
export interface FoundInstall {
  namespace: string;
  deployment: string;
  flavour: Flavour;
  container: Container;
  /** The other containers' names (Argo's workflow-controller for a sidecar). */
  beside: string[];
  volumes: Volume[];
}

export const CONTAINER_NAME = 'finalizer-sweeper';

/** findInstalls lists the Deployments that run our controller, in the order given. */
export function findInstalls(deployments: readonly Deployment[]): FoundInstall[] {
  const found: FoundInstall[] = [];
  for (const d of deployments) {
    const containers = d.spec?.template?.spec?.containers ?? [];
    const ours = containers.find(isOurController);
    if (ours === undefined) continue;
    const beside = containers.filter((c) => c !== ours).map((c) => c.name);
    found.push({
      namespace: d.metadata.namespace ?? '',
      deployment: d.metadata.name,
      flavour: beside.length > 0 ? 'sidecar' : 'standalone',
      container: ours,
      beside,
      volumes: d.spec?.template?.spec?.volumes ?? [],
    });
  }
  return found;
}

/** isOurController: our container, running the controller (not a one-shot sweep). */
export function isOurController(c: Container): boolean {
  if (c.name !== CONTAINER_NAME && imageName(c.image ?? '') !== CONTAINER_NAME) return false;
  const first = c.args?.[0];
  return first === undefined || first === 'controller' || first.startsWith('-');
}

/** imageName is an image reference's last path segment without tag or digest: `finalizer-sweeper` of `reg:5000/x/finalizer-sweeper:0.1.0@sha256:…`. */
export function imageName(image: string): string {
  const path = image.split('@')[0] ?? '';
  const last = path.slice(path.lastIndexOf('/') + 1);
  return last.split(':')[0] ?? '';
}
