// ScriptedLister answers list requests from a script of pages and errors, in order, recording
// what each request asked for. For unit tests of what reads lists: the cases a real API server
// produces only with well-timed etcd compaction. The real server is tested in test/integration.

import type { ListOptions, MetaList } from '../kube/metadata-api.ts';
import type { Lister } from './list-pages.ts';

export class ScriptedLister implements Lister {
  readonly requests: { namespace: string | null; opts: ListOptions }[] = [];
  readonly #script: (MetaList | Error)[];

  constructor(script: (MetaList | Error)[]) {
    this.#script = script;
  }

  async list(namespace: string | null, opts: ListOptions): Promise<MetaList> {
    this.requests.push({ namespace, opts });
    const next = this.#script.shift();
    if (next === undefined) throw new Error('no more pages scripted');
    if (next instanceof Error) throw next;
    return next;
  }
}
