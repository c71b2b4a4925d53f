// KubeConfigError lives apart from kubeconfig.ts so that the lean credentials path
// (credentials.ts) can throw it without loading @kubernetes/client-node.

/**
 * KubeConfigError is a failure to find or use cluster credentials. exitCode is what the CLI
 * should exit with: 2 for bad input the user can fix on the command line or in the file (an
 * unreadable or malformed file, an unknown context), 3 when there is no cluster to talk to at all
 * or its credentials cannot be obtained.
 */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
  readonly exitCode: 2 | 3;

  constructor(message: string, exitCode: 2 | 3, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
  }
}
