// startArgoBed starts the real-Argo bed: a control plane of its own with Argo's CRDs installed
// before the controller manager (so that its garbage collector knows Workflows from the start),
// kwok as the kubelet of one fake node, the driver (scheduler and wait containers), and Argo's own
// workflow-controller. Everything listens on loopback and is stopped by PID. docs/testing.md,
// "The real-Argo bed".
import { findArgoBedBinaries, type ArgoBedBinaries } from './argo-binaries.ts';
import { startArgo, type ArgoOptions, type RunningArgo } from './argo-controller.ts';
import { ArgoDriver } from './argo-driver.ts';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from './control-plane.ts';
import { loadCrdDir } from './crds.ts';
import { startKwok, type RunningKwok } from './kwok.ts';

export interface ArgoBedOptions {
  /** How Argo is started (namespaced, instance ID, environment). */
  argo?: ArgoOptions;
  /** Flags of the control plane's programs (Argo's CRDs are always installed). */
  plane?: Pick<ControlPlaneOptions, 'apiserverArgs' | 'controllerManagerArgs'>;
  /** Receives every output line of every program of the bed. */
  log?: (line: string) => void;
}

export interface ArgoBed {
  plane: ControlPlane;
  bins: ArgoBedBinaries;
  kwok: RunningKwok;
  driver: ArgoDriver;
  /** argo is the running workflow-controller; stop it and start another with startArgo(bed.plane, bed.bins, ...). */
  argo: RunningArgo;
  /** stop ends Argo, the driver, kwok and the control plane, in that order; idempotent. */
  stop(): Promise<void>;
}

export async function startArgoBed(opts: ArgoBedOptions = {}): Promise<ArgoBed> {
  const bins = await findArgoBedBinaries();
  const plane = await startControlPlane({ ...opts.plane, crds: await loadCrdDir(bins.crdDir), log: opts.log });
  const stops: (() => Promise<void>)[] = [() => plane.stop()];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const s of stops.splice(0).reverse()) await s();
    })());
  try {
    const kwok = await startKwok(plane, bins, 'kwok-node', opts.log);
    stops.push(() => kwok.stop());
    const driver = await ArgoDriver.start(plane, kwok.nodeName);
    stops.push(() => driver.stop());
    const bed: ArgoBed = { plane, bins, kwok, driver, argo: await startArgo(plane, bins, { log: opts.log, ...opts.argo }), stop };
    stops.push(() => bed.argo.stop());
    return bed;
  } catch (err) {
    await stop();
    throw err;
  }
}
