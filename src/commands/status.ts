// `finalizer-sweeper status [NAMESPACE[/DEPLOYMENT]]`: whether an install works. Wiring only: the
// reads are src/status/read-status-evidence.ts's, the verdict src/status/status-report.ts's.
// Exit codes (docs/operations.md): 0 every install found works, 1 one does not, 3 the
// Deployments cannot be listed, 4 no install found.

import type { Settings } from '../config/settings.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics/metrics.ts';
import { DeploymentsUnreadable, readStatusEvidence, type StatusTarget } from '../status/read-status-evidence.ts';
import { buildStatusReport, exitCodeOfStatus } from '../status/status-report.ts';
import { renderStatusReport } from '../status/render-status-report.ts';
import { connect } from './connect.ts';
import { EXIT } from './exit-codes.ts';
import { VERSION } from '../version.ts';

export async function runStatus(settings: Settings, target: StatusTarget): Promise<number> {
  const logger = createLogger(settings);
  try {
    // As explain: the API budget's start line is noise before a report.
    const connection = await connect(settings, new Metrics({ version: VERSION }), { ...logger, info: logger.debug });
    if (typeof connection === 'number') return connection;
    try {
      const report = buildStatusReport(target.namespace, await readStatusEvidence(connection.client, target));
      process.stdout.write(settings.output === 'json' ? JSON.stringify(report) + '\n' : renderStatusReport(report, process.stdout.isTTY === true));
      return exitCodeOfStatus(report);
    } catch (err) {
      if (!(err instanceof DeploymentsUnreadable)) throw err;
      logger.error({ err: err.message }, 'cannot list the Deployments to find an install');
      return EXIT.unreachable;
    } finally {
      connection.client.close();
    }
  } finally {
    await logger.flush();
  }
}
