// The worker thread of src/pki/pki.ts: makes certificates with @peculiar/x509 (x509.ts), so that the library's code
// and heap go away with the thread instead of staying in the manager's for its life.
import { parentPort } from 'node:worker_threads';
import { generateCA, generateLeaf, readCA } from './x509.ts';

export const PKI_OPERATIONS = { generateCA, readCA, generateLeaf };
export type PkiOperation = keyof typeof PKI_OPERATIONS;

parentPort?.on('message', (m: { id: number; op: PkiOperation; args: unknown[] }) => {
  const run = PKI_OPERATIONS[m.op] as (...args: unknown[]) => Promise<unknown>;
  run(...m.args).then(
    (result) => parentPort!.postMessage({ id: m.id, result }),
    (err: unknown) => parentPort!.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
