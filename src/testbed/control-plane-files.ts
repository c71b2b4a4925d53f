// The files a control plane needs before it starts (token file, service-account key pair) and the
// kubeconfig it hands out, plus free loopback ports.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** ADMIN_USER is the token user; it is in system:masters, so RBAC lets it do everything. */
export const ADMIN_USER = 'admin';

/** writeTokenFile writes a --token-auth-file with one system:masters user and returns its token. */
export async function writeTokenFile(path: string): Promise<string> {
  const token = randomBytes(24).toString('hex');
  await writeFile(path, `${token},${ADMIN_USER},admin-uid,"system:masters"\n`, { mode: 0o600 });
  return token;
}

/** writeServiceAccountKeys makes the RSA key pair kube-apiserver signs and checks SA tokens with. */
export async function writeServiceAccountKeys(dir: string): Promise<{ key: string; pub: string }> {
  const key = join(dir, 'sa.key');
  const pub = join(dir, 'sa.pub');
  await run('openssl', ['genrsa', '-out', key, '2048']);
  await run('openssl', ['rsa', '-in', key, '-pubout', '-out', pub]);
  return { key, pub };
}

/** writeKubeconfig writes a kubeconfig for the admin token user, and returns its path. */
export async function writeKubeconfig(
  path: string,
  c: { server: string; caData: string; token: string },
): Promise<string> {
  const text = `apiVersion: v1
kind: Config
clusters:
- name: finalizer-sweeper-test
  cluster:
    server: ${c.server}
    certificate-authority-data: ${c.caData}
users:
- name: ${ADMIN_USER}
  user:
    token: ${c.token}
contexts:
- name: finalizer-sweeper-test
  context:
    cluster: finalizer-sweeper-test
    user: ${ADMIN_USER}
current-context: finalizer-sweeper-test
`;
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

/** freePort asks the kernel for an unused port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
