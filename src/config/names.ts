// Kubernetes name syntax, checked at start-up so that a typo fails fast with exit code 2
// instead of surfacing later as a 400 from the API server or a watch that matches nothing.
// Rules from k8s.io/apimachinery/pkg/util/validation; each function returns the problem or null.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** dnsLabelProblem checks an RFC 1123 label (namespaces, resource names, versions). */
export function dnsLabelProblem(value: string): string | null {
  if (value.length > 63) return 'longer than 63 characters';
  return DNS_LABEL.test(value) ? null : 'not a DNS-1123 label (lower-case letters, digits and "-")';
}

/** dnsSubdomainProblem checks an RFC 1123 subdomain (API groups, Lease names, prefixes). */
export function dnsSubdomainProblem(value: string): string | null {
  if (value.length > 253) return 'longer than 253 characters';
  const bad = value.split('.').some((label) => label.length > 63 || !DNS_LABEL.test(label));
  return bad ? 'not a DNS-1123 subdomain (lower-case labels separated by ".")' : null;
}

/** qualifiedNameProblem checks `[prefix/]name`, the syntax of label keys and finalizers. */
export function qualifiedNameProblem(value: string): string | null {
  const parts = value.split('/');
  if (parts.length > 2) return 'more than one "/"';
  const name = parts.length === 2 ? (parts[1] ?? '') : value;
  if (parts.length === 2) {
    const prefixProblem = dnsSubdomainProblem(parts[0] ?? '');
    if (prefixProblem !== null) return `prefix is ${prefixProblem}`;
  }
  if (name.length === 0 || name.length > 63) return 'name part must be 1 to 63 characters';
  return NAME_PART.test(name) ? null : 'name part must be alphanumeric, with "-", "_" or "." inside';
}

/** labelValueProblem checks a label value, which may be empty. */
export function labelValueProblem(value: string): string | null {
  if (value === '') return null;
  if (value.length > 63) return 'label value longer than 63 characters';
  return NAME_PART.test(value) ? null : `label value "${value}" must be alphanumeric, with "-", "_" or "." inside`;
}

const EXISTS = /^(!?)\s*([^\s=!()]+)$/;
const EQUALITY = /^([^\s=!()]+)\s*(==|=|!=)\s*([^\s=!(),]*)$/;
const SET = /^([^\s=!()]+)\s+(in|notin)\s*\(([^()]*)\)$/;

/**
 * labelSelectorProblem checks the string form of a label selector (`a`, `!a`, `a=b`, `a!=b`,
 * `a in (b,c)`, `a notin (b)`), comma-separated; the empty selector selects everything.
 */
export function labelSelectorProblem(selector: string): string | null {
  if (selector.trim() === '') return null;
  for (const requirement of splitTopLevel(selector)) {
    const problem = requirementProblem(requirement.trim());
    if (problem !== null) return problem;
  }
  return null;
}

function requirementProblem(requirement: string): string | null {
  if (requirement === '') return 'empty requirement (stray ",")';
  const set = SET.exec(requirement);
  const equality = EQUALITY.exec(requirement);
  const exists = EXISTS.exec(requirement);
  const key = set?.[1] ?? equality?.[1] ?? exists?.[2];
  if (key === undefined) return `cannot read requirement "${requirement}"`;
  const keyProblem = qualifiedNameProblem(key);
  if (keyProblem !== null) return `label key "${key}": ${keyProblem}`;
  const values = set ? (set[3] ?? '').split(',').map((v) => v.trim()) : [equality?.[3] ?? ''];
  for (const value of values) {
    const problem = labelValueProblem(value);
    if (problem !== null) return problem;
  }
  return null;
}

/** splitTopLevel splits on commas outside parentheses, so `a in (b,c),d` is two requirements. */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(selector.slice(start));
  return parts;
}
