// Serving certificate from a directory holding tls.crt and tls.key (a mounted Secret or cert-manager
// output), reloaded when the files change: fs.watch on the directory (Secret volumes swap a `..data`
// symlink, so watching the files themselves misses updates) plus a poll as a fallback for filesystems where
// watch events do not arrive.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';

export interface KeyPair {
  cert: Buffer;
  key: Buffer;
}

/** Reads and checks the pair (createSecureContext throws when the key does not match the certificate). */
export async function loadKeyPair(certDir: string): Promise<KeyPair> {
  const [cert, key] = await Promise.all([readFile(join(certDir, 'tls.crt')), readFile(join(certDir, 'tls.key'))]);
  createSecureContext({ cert, key });
  return { cert, key };
}

export interface CertWatcherOptions {
  certDir: string;
  logger: Logger;
  /** Called with each new, valid pair. */
  onChange: (pair: KeyPair) => void;
  pollIntervalMs?: number;
  /** The pair already in use, so the first check does not report it as new. */
  current?: KeyPair;
}

export interface CertWatcher {
  /** Re-reads now; resolves true when a new pair was loaded. */
  check(): Promise<boolean>;
  close(): void;
}

export function watchKeyPair(opts: CertWatcherOptions): CertWatcher {
  let current = opts.current;
  let closed = false;
  let debounce: NodeJS.Timeout | undefined;
  let running: Promise<boolean> | undefined;

  const check = async (): Promise<boolean> => {
    if (closed) return false;
    if (running) return running;
    running = (async () => {
      try {
        const pair = await loadKeyPair(opts.certDir);
        if (current && pair.cert.equals(current.cert) && pair.key.equals(current.key)) return false;
        current = pair;
        opts.onChange(pair);
        opts.logger.info({ certDir: opts.certDir }, 'serving certificate reloaded');
        return true;
      } catch (err) {
        // Mid-rotation the two files can briefly disagree: keep serving the old pair, try again later.
        opts.logger.warn({ certDir: opts.certDir, reason: (err as Error).message }, 'serving certificate not reloaded');
        return false;
      } finally {
        running = undefined;
      }
    })();
    return running;
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(opts.certDir, { persistent: false }, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => void check(), 100);
    });
    watcher.on('error', (err) => {
      opts.logger.warn({ reason: err.message }, 'watching the cert dir failed; polling only');
      watcher?.close();
    });
  } catch (err) {
    opts.logger.warn({ reason: (err as Error).message }, 'cannot watch the cert dir; polling only');
  }
  const poll = setInterval(() => void check(), opts.pollIntervalMs ?? 10_000);
  poll.unref();

  return {
    check,
    close() {
      closed = true;
      clearTimeout(debounce);
      clearInterval(poll);
      watcher?.close();
    },
  };
}
