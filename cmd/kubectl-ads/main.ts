// The `kubectl ads` plugin's entrypoint (bin/kubectl-ads runs it from the sources; hack/bundle.ts bundles it into
// kubectl-ads.mjs for the npm package): wires the process (stdout, stderr, Ctrl-C, the clock) to plugin/cli.ts and
// exits with its code. The completion entry (kubectl_complete-ads) runs it with `__complete` first.
import { runCli } from '../../plugin/cli.ts';

const interrupt = new AbortController();
process.once('SIGINT', () => {
  // First Ctrl-C: stop waiting (status --watch, dashboard) and exit cleanly; a second one kills.
  interrupt.abort(new Error('interrupted'));
  process.once('SIGINT', () => process.exit(130));
});

const stdoutIsTTY = process.stdout.isTTY === true;
const code = await runCli(process.argv.slice(2), {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  isTTY: stdoutIsTTY,
  columns: stdoutIsTTY ? process.stdout.columns || 80 : 80,
  signal: interrupt.signal,
  now: () => Date.now(),
});
process.exitCode = code;
// Let stdout drain (a pipe), then leave even if a keep-alive socket lingers.
process.stdout.write('', () => process.exit(code));
