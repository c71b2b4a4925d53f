// scriptedClient answers an ApiClient's requests from routes keyed "METHOD path" (a key ending in
// `*` matches every path it begins), recording each request. For unit tests of the readers that
// make a handful of distinct requests (explain's); the real server is tested in test/integration.

import type { ApiClient, RequestOptions } from './client.ts';
import { ApiError } from './errors.ts';

/** Route answers one request: its value is the answer, an Error is thrown. */
export type Route = (o: RequestOptions) => unknown;

export function scriptedClient(routes: Record<string, Route>): { client: ApiClient; requests: RequestOptions[] } {
  const requests: RequestOptions[] = [];
  const prefixes = Object.keys(routes).filter((k) => k.endsWith('*'));
  const request = async (o: RequestOptions) => {
    requests.push(o);
    const key = `${o.method} ${o.path}`;
    const route = routes[key] ?? routes[prefixes.find((p) => key.startsWith(p.slice(0, -1))) ?? ''];
    if (route === undefined) throw new Error(`unexpected ${key}`);
    const answer = route(o);
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { client: { request } as unknown as ApiClient, requests };
}

/** forbidden is RBAC's 403 for `verb` on `resource`, as the API server words it. */
export const forbidden = (verb: string, resource: string): ApiError =>
  ApiError.fromStatus({ code: 403, reason: 'Forbidden', message: `User "jane" cannot ${verb} resource "${resource}"` }, 403);
