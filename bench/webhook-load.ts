// The load generator, in its own process (pinned to the other core): autocannon against one
// webhook path. Argument: a JSON object of options; prints autocannon's result as JSON.
import autocannon from 'autocannon';
import type { LoadOptions } from './webhook.ts';

const o = JSON.parse(process.argv[2] ?? '{}') as LoadOptions;
const result = await autocannon({
  url: o.url,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: o.body,
  connections: o.connections,
  duration: o.durationSeconds,
  ...(o.overallRate ? { overallRate: o.overallRate } : {}),
  tlsOptions: { ca: o.ca },
});
process.stdout.write(`${JSON.stringify(result)}\n`);
