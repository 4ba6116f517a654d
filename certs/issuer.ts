// Who makes the manager's certificates: a child process of its own, which ends once they are made.
//
// The certificates are written with @peculiar/x509 (src/pki/pki.ts), and an ES module stays in the heap for as long
// as the process runs: the library, its ASN.1 schemas, tsyringe and reflect-metadata, 3.5 MiB of heap (a process
// that made a CA and a leaf held 16.9 MiB of heap against 13.4 MiB for one that made none, src/pki/pki.ts). The
// manager makes one at every start (--metrics-secure, the chart's default: a self-signed certificate for /metrics)
// and at the first start and each renewal of the webhook's, so every replica held it for good. Made in a child
// process, it is gone when the process ends (a worker thread was tried first: its isolate stays counted while it
// runs and its memory is not all returned, src/pki/pki.ts). The child is the same Node with the same flags
// (execArgv: tsx from source), running issuer-process.ts (dist/certs-issuer.mjs beside the bundle, hack/bundle.ts).
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { besideModule } from '../src/cli/main-module.ts';
import { issueMaterial } from './bootstrap.ts';
import { newServingCertificate } from './webhook-config.ts';

/** The two ways the manager makes certificates, with the signatures of the in-process functions. */
export interface CertificateIssuer {
  issueMaterial: typeof issueMaterial;
  newServingCertificate: typeof newServingCertificate;
}

/** In this process: the library stays loaded (tests, the `certs` command, which ends anyway). */
export const IN_PROCESS_ISSUER: CertificateIssuer = { issueMaterial, newServingCertificate };

/** What the parent sends the child: the function and its arguments (structured clone: Dates stay Dates). */
export type IssueRequest =
  | { fn: 'issueMaterial'; args: Parameters<typeof issueMaterial> }
  | { fn: 'newServingCertificate'; args: Parameters<typeof newServingCertificate> };

/** What the child answers before it exits. */
export type IssueReply = { value: unknown } | { error: string };

/** The child's entry beside this module (besideModule): issuer-process.ts from source, certs-issuer.mjs beside the bundle. */
export const ISSUER_PROCESS_FILE = besideModule(import.meta.url, 'issuer-process.ts', 'certs-issuer.mjs');

/** Far longer than a CA and a leaf take: 0.4-0.7 s from the bundle, the child's start included, on a busy 2-core machine. */
const DEFAULT_TIMEOUT_MS = 60_000;

/** Makes each certificate in a child process (the header says why). */
export function childProcessIssuer({
  file = ISSUER_PROCESS_FILE,
  timeoutMs = DEFAULT_TIMEOUT_MS,
}: { file?: string; timeoutMs?: number } = {}): CertificateIssuer {
  const call = <T>(request: IssueRequest) => inChildProcess(file, request, timeoutMs) as Promise<T>;
  return {
    issueMaterial: (...args) => call({ fn: 'issueMaterial', args }),
    newServingCertificate: (...args) => call({ fn: 'newServingCertificate', args }),
  };
}

function inChildProcess(file: string, request: IssueRequest, timeoutMs: number): Promise<unknown> {
  if (!existsSync(file)) {
    return Promise.reject(new Error(`the certificate issuer ${file} is missing (the build puts it beside the bundle)`));
  }
  return new Promise((resolve, reject) => {
    const child = fork(file, [], {
      execArgv: process.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let reply: IssueReply | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`making a certificate (${request.fn}) took over ${timeoutMs} ms; the process was killed`));
    }, timeoutMs);
    child.on('message', (m) => {
      reply = m as IssueReply;
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`making a certificate (${request.fn}): ${err.message}`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (reply && 'value' in reply) resolve(reply.value);
      else if (reply) reject(new Error(`making a certificate (${request.fn}): ${reply.error}`));
      else
        reject(
          new Error(`making a certificate (${request.fn}): the process exited (${signal ?? code}) with no answer`),
        );
    });
    child.send(request);
  });
}
