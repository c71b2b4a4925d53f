import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ARGO_CONVENTIONS, podListSelector } from './settings.ts';

const LABEL = 'workflows.argoproj.io/controller-instanceid';

// Argo's own rule: with --instanceid only pods labelled with it, without one only pods without the label.
const cases: Array<{ podSelector: string; instanceId: string | null; selector: string }> = [
  { podSelector: 'workflows.argoproj.io/workflow', instanceId: null, selector: `workflows.argoproj.io/workflow,!${LABEL}` },
  { podSelector: 'workflows.argoproj.io/workflow', instanceId: 'east', selector: `workflows.argoproj.io/workflow,${LABEL}=east` },
  { podSelector: '', instanceId: null, selector: `!${LABEL}` },
  { podSelector: '  ', instanceId: 'east', selector: `${LABEL}=east` },
];
for (const { podSelector, instanceId, selector } of cases) {
  test(`podListSelector: --pod-selector ${JSON.stringify(podSelector)}, --instance-id ${instanceId ?? 'unset'}`, () => {
    assert.equal(podListSelector({ podSelector, instanceId, conventions: ARGO_CONVENTIONS }), selector);
  });
}
