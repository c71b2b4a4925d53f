// A structured label selector (metav1.LabelSelector: matchLabels and matchExpressions) matched
// against a set of labels, as the API server matches a webhook's namespaceSelector and
// objectSelector. Pure; the string form of selectors is the API server's to match (explain asks
// it with a list), but these selectors are only ever matched inside the API server, so explain
// has to match them itself to say which webhooks a pod's UPDATE reaches.

export interface LabelSelector {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] | null }> | null;
}

/**
 * selectorMatches: every requirement holds (an empty selector selects everything; so does an
 * absent one, which the API server defaults to the empty selector for webhooks).
 */
export function selectorMatches(selector: LabelSelector | null | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (selector === null || selector === undefined) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((e) => {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        return has && values.includes(labels[e.key] as string);
      case 'NotIn':
        return !has || !values.includes(labels[e.key] as string);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
      default:
        // The API server refuses to store any other operator; should one come, select nothing rather than guess.
        return false;
    }
  });
}

/** selectsEverything: the selector has no requirement, so no labels are needed to match it. */
export function selectsEverything(selector: LabelSelector | null | undefined): boolean {
  return Object.keys(selector?.matchLabels ?? {}).length === 0 && (selector?.matchExpressions ?? []).length === 0;
}
