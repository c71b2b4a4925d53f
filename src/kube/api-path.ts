// The resource an API path names, for the request metrics: what the controller costs the API
// server is asked by resource (its pods' patches, its owners' reads, its namespaces' reads), as
// the API server's own apiserver_request_total answers it.

/**
 * resourceOfPath is the resource of a Kubernetes API path: `pods` for
 * /api/v1/namespaces/x/pods/y (and its subresources), `workflows` for
 * /apis/argoproj.io/v1alpha1/namespaces/x/workflows, `namespaces` for /api/v1/namespaces/x; ''
 * for a path that names none (discovery, /version).
 */
export function resourceOfPath(path: string): string {
  const parts = path.split('?', 1)[0]!.split('/').filter((p) => p !== '');
  // /api/v1/… or /apis/GROUP/VERSION/…; the legacy watch prefix (/api/v1/watch/…) is not used.
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  // namespaces/NS/RESOURCE/… names RESOURCE; namespaces or namespaces/NS alone is the namespace.
  if (rest[0] === 'namespaces' && rest.length >= 3) return rest[2]!;
  return rest[0] ?? '';
}
