// The config file is read once, at start. A ConfigMap mounted as a volume is updated in place
// (the kubelet swaps a symlink, within a minute or two), so a running controller would go on with
// the old settings for good where nothing rolls the pod: the Helm values and the patch route name
// the ConfigMap without a content hash. watchConfigFile sees each change; the controller checks
// the new text (config-reload.ts) and stops, as on SIGTERM, only for one it can start with: the
// kubelet then restarts this container alone (in the sidecar flavours, not Argo's) with the new
// settings. A text it cannot start with leaves it running on the old ones: stopping then would
// crash-loop the container, and in the sidecar flavours take Argo's pod NotReady.

import { readFile } from 'node:fs/promises';

/** How often the file is read again: small next to the kubelet's own delay in updating it. */
export const CONFIG_POLL_MS = 10_000;

/**
 * watchConfigFile reads `path` every `pollMs` and calls `onChange` with its text each time that
 * text differs from the one it last saw, `loaded` at first. A file that cannot be read (between
 * the kubelet's swaps, or removed) is not a change: the next read decides. Returns a function
 * that stops watching.
 */
export function watchConfigFile(path: string, loaded: string, onChange: (text: string) => void, pollMs = CONFIG_POLL_MS): () => void {
  let stopped = false;
  let reading = false;
  let last = loaded;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    readFile(path, 'utf8').then(
      (text) => {
        reading = false;
        if (stopped || text === last) return;
        last = text;
        onChange(text);
      },
      () => {
        reading = false;
      },
    );
  }, pollMs);
  // Never what keeps the process alive.
  timer.unref();
  const stop = (): void => {
    stopped = true;
    clearInterval(timer);
  };
  return stop;
}
