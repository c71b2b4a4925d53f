// The argument of `explain pod`: NAMESPACE/NAME, as kubectl prints pods across namespaces.

import { dnsLabelProblem, dnsSubdomainProblem } from '../config/names.ts';

/** parsePodTarget reads NAMESPACE/NAME, or says in one line what is wrong with it. */
export function parsePodTarget(target: string): { namespace: string; name: string } | { problem: string } {
  const slash = target.indexOf('/');
  if (slash === -1) return { problem: `"${target}": expected NAMESPACE/NAME, such as argo/hello-x7k2p-main-1234` };
  const namespace = target.slice(0, slash);
  const name = target.slice(slash + 1);
  const nsProblem = dnsLabelProblem(namespace);
  if (nsProblem !== null) return { problem: `"${target}": namespace "${namespace}": ${nsProblem}` };
  const nameProblem = dnsSubdomainProblem(name);
  if (nameProblem !== null) return { problem: `"${target}": pod name "${name}": ${nameProblem}` };
  return { namespace, name };
}
