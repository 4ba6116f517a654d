// Serving certificate from a directory holding tls.crt and tls.key (a mounted Secret or cert-manager
// output), reloaded when the files change: fs.watch on the directory (Secret volumes swap a `..data`
// symlink, so watching the files themselves misses updates) plus a poll as a fallback for filesystems where
// watch events do not arrive.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';

export interface KeyPair {
  cert: Buffer;
  key: Buffer;
}

/**
 * The TLS policy of every HTTPS endpoint the process serves: TLS 1.2 or 1.3; under 1.2 only ECDHE key
 * exchange with AEAD ciphers (no CBC, no SHA-1 MAC, no static RSA), as Mozilla's "intermediate" profile
 * (https://wiki.mozilla.org/Security/Server_Side_TLS) and the suites Go's crypto/tls, the apiserver's client,
 * prefers. TLS 1.3 suites are all AEAD. Passed again on every certificate reload: `setSecureContext` builds
 * the context from the options it is given alone, so a reload with only cert and key would fall back to
 * Node's defaults (which accept CBC-SHA1 suites).
 */
export const TLS_POLICY = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
  honorCipherOrder: true,
} as const satisfies SecureContextOptions;

/** Secure-context options for a key pair under TLS_POLICY. */
export function secureContextOptions(pair: KeyPair): SecureContextOptions {
  return { ...TLS_POLICY, cert: pair.cert, key: pair.key };
}

/** Reads and checks the pair (createSecureContext throws when the key does not match the certificate). */
export async function loadKeyPair(certDir: string): Promise<KeyPair> {
  const [cert, key] = await Promise.all([readFile(join(certDir, 'tls.crt')), readFile(join(certDir, 'tls.key'))]);
  createSecureContext(secureContextOptions({ cert, key }));
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
