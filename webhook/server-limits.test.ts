// The HTTPS server under hostile clients, over real sockets on loopback: the TLS policy (no CBC-SHA1, no TLS
// below 1.2, kept across a certificate reload, for ECDSA and RSA keys), idle connections closed (handshaken or
// not), unused ones not taken for slow ones, and the connection cap.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  connect as tlsConnect,
  createServer as createTlsServer,
  type ConnectionOptions,
  type TLSSocket,
} from 'node:tls';
import * as x509 from '@peculiar/x509';
import { pino } from 'pino';
import { newServingCertificate } from '../certs/webhook-config.ts';
import { MUTATE_PATH } from '../src/api/constants.ts';
import { startWebhookServer, type WebhookServer } from './server.ts';
import { admissionReview, daemonSetManifest } from '../src/api/testing/review-fixtures.ts';
import { sleep, until } from '../src/testing/wait.ts';

const logger = pino({ level: 'silent' });

async function ecdsaPair(dir: string): Promise<{ ca: string; key: string; cert: string }> {
  const { ca, leaf } = await newServingCertificate(['127.0.0.1']);
  writeFileSync(join(dir, 'tls.key'), leaf.keyPem);
  writeFileSync(join(dir, 'tls.crt'), leaf.certPem);
  return { ca: ca.certPem, key: leaf.keyPem, cert: leaf.certPem };
}

/** A self-signed RSA serving certificate (cert-manager and external PKIs often issue RSA keys). */
async function rsaPair(dir: string): Promise<{ ca: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=127.0.0.1',
    notBefore: new Date(Date.now() - 3600_000),
    notAfter: new Date(Date.now() + 86400_000),
    keys: keys as unknown as Parameters<typeof x509.X509CertificateGenerator.createSelfSigned>[0]['keys'],
    signingAlgorithm: alg,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }])],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  writeFileSync(join(dir, 'tls.key'), keyPem);
  writeFileSync(join(dir, 'tls.crt'), cert.toString('pem'));
  return { ca: cert.toString('pem') };
} // prettier-ignore

/** A TLS handshake with `options`: the negotiated protocol and cipher, or the error. */
function handshake(port: number, options: ConnectionOptions): Promise<{ protocol: string; cipher: string } | Error> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername: undefined, ...options }, () => {
      const result = { protocol: socket.getProtocol() ?? '', cipher: socket.getCipher().name };
      socket.end();
      resolve(result);
    });
    socket.on('error', (err) => resolve(err));
  });
}

/** POSTs a review on a connection made with `options`; the response's uid. */
function review(port: number, options: ConnectionOptions, uid: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid }));
    const socket = tlsConnect({ host: '127.0.0.1', port, ...options }, () => {
      socket.write(
        `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('end', () => {
      const json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { response: { uid: string } };
      resolve(json.response.uid);
    });
    socket.on('error', reject);
  });
}

const CBC_SHA1 = { ecdsa: 'ECDHE-ECDSA-AES128-SHA', rsa: 'ECDHE-RSA-AES128-SHA' } as const;
const TLS12_AEAD = { ecdsa: 'ECDHE-ECDSA-AES128-GCM-SHA256', rsa: 'ECDHE-RSA-AES256-GCM-SHA384' } as const;

for (const keyType of ['ecdsa', 'rsa'] as const) {
  describe(`TLS policy (${keyType} serving key)`, () => {
    let dir: string;
    let ca: string;
    let server: WebhookServer;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ads-webhook-tls-'));
      ca = (keyType === 'ecdsa' ? await ecdsaPair(dir) : await rsaPair(dir)).ca;
      server = await startWebhookServer({ certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0 });
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('control: a server with Node defaults accepts the CBC-SHA1 client this policy refuses', async () => {
      const { readFileSync } = await import('node:fs');
      const plain = createTlsServer({
        key: readFileSync(join(dir, 'tls.key')),
        cert: readFileSync(join(dir, 'tls.crt')),
      });
      plain.on('secureConnection', (s) => s.end());
      await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
      try {
        const port = (plain.address() as { port: number }).port;
        const r = await handshake(port, { ca, ciphers: CBC_SHA1[keyType], maxVersion: 'TLSv1.2' });
        assert.ok(!(r instanceof Error), String(r));
        assert.equal(r.cipher, CBC_SHA1[keyType]);
      } finally {
        plain.close();
      }
    });

    test(`a TLS 1.2 client offering only ${CBC_SHA1[keyType]} is refused`, async () => {
      const r = await handshake(server.port, { ca, ciphers: CBC_SHA1[keyType], maxVersion: 'TLSv1.2' });
      assert.ok(r instanceof Error, `negotiated ${JSON.stringify(r)}`);
      assert.match(r.message, /handshake failure|no shared cipher/i);
    });

    test('TLS 1.1 and 1.0 are refused', async () => {
      for (const maxVersion of ['TLSv1.1', 'TLSv1'] as const) {
        const r = await handshake(server.port, { ca, minVersion: 'TLSv1', maxVersion, ciphers: 'DEFAULT@SECLEVEL=0' });
        assert.ok(r instanceof Error, `${maxVersion} negotiated ${JSON.stringify(r)}`);
      }
    });

    test('a TLS 1.2 client that asks to renegotiate is cut off', async () => {
      const socket = await new Promise<TLSSocket>((resolve, reject) => {
        const s = tlsConnect({ host: '127.0.0.1', port: server.port, ca, maxVersion: 'TLSv1.2' }, () => resolve(s));
        s.on('error', reject);
      });
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (answer += d));
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      assert.ok(
        socket.renegotiate({ rejectUnauthorized: true }, () => {}),
        'the client may ask',
      );
      await closed;
      // Node's HTTP server answers the socket's error (ERR_TLS_RENEGOTIATION_DISABLED) with a 400 and closes.
      assert.match(answer, /^HTTP\/1.1 400 Bad Request/);
    });

    test(`TLS 1.2 with ECDHE and AEAD (${TLS12_AEAD[keyType]}) is served`, async () => {
      const r = await handshake(server.port, { ca, ciphers: TLS12_AEAD[keyType], maxVersion: 'TLSv1.2' });
      assert.ok(!(r instanceof Error), String(r));
      assert.deepEqual(r, { protocol: 'TLSv1.2', cipher: TLS12_AEAD[keyType] });
      assert.equal(
        await review(server.port, { ca, ciphers: TLS12_AEAD[keyType], maxVersion: 'TLSv1.2' }, 'v12'),
        'v12',
      );
    });

    test('a TLS 1.3 client is served', async () => {
      const r = await handshake(server.port, { ca, minVersion: 'TLSv1.3' });
      assert.ok(!(r instanceof Error), String(r));
      assert.equal(r.protocol, 'TLSv1.3');
      assert.equal(await review(server.port, { ca, minVersion: 'TLSv1.3' }, 'v13'), 'v13');
    });

    test('the policy survives a certificate reload', async () => {
      const next = keyType === 'ecdsa' ? await ecdsaPair(dir) : await rsaPair(dir);
      assert.equal(await server.reloadCertificates(), true);
      const served = await handshake(server.port, { ca: next.ca, ciphers: TLS12_AEAD[keyType], maxVersion: 'TLSv1.2' });
      assert.ok(!(served instanceof Error), `the new certificate is served: ${String(served)}`);
      const refused = await handshake(server.port, { ca: next.ca, ciphers: CBC_SHA1[keyType], maxVersion: 'TLSv1.2' });
      assert.ok(refused instanceof Error, `negotiated ${JSON.stringify(refused)} after the reload`);
      ca = next.ca;
    });
  });
}

describe('connections: idle ones closed, open ones capped', () => {
  let dir: string;
  let ca: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ads-webhook-conn-'));
    ca = (await ecdsaPair(dir)).ca;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const opened: Socket[] = [];
  after(() => opened.forEach((s) => s.destroy()));

  /** When each socket was last active (handshake or write) and when it closed. */
  const lastActive = new WeakMap<Socket, number>();
  const closedAt = new WeakMap<Socket, number>();
  const track = (s: Socket) => {
    lastActive.set(s, performance.now());
    // Read whatever arrives (TLS 1.3 session tickets): a paused client stream may never surface the server's
    // FIN as 'end'/'close' (seen under CPU load: the socket sat in CLOSE-WAIT while the server held nothing).
    s.resume();
    s.once('close', () => closedAt.set(s, performance.now()));
    return s;
  };

  /** Opens a TLS connection, completes the handshake and sends nothing; resolves once handshaken. */
  const idleTls = (port: number) =>
    new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port, ca }, () => resolve(track(s) as TLSSocket));
      opened.push(s);
      s.on('error', reject);
      s.once('close', () => reject(new Error('closed before the handshake')));
    });

  test('200 handshaken, silent TLS connections, 50 silent TCP ones and 50 with half a request line are all closed after the connection timeout', async () => {
    const server = await startWebhookServer({
      certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0,
      limits: { connectionTimeoutMs: 5_000, maxConnectionsPerClient: 512 },
    }); // prettier-ignore
    // The server's count, sampled all along while they open (the earliest may time out before the last opens).
    let peak = 0;
    const sampling = setInterval(() => void server.connections().then((n) => (peak = Math.max(peak, n))), 20);
    try {
      const handshaken = await Promise.all(Array.from({ length: 200 }, () => idleTls(server.port)));
      const raw = await Promise.all(
        Array.from({ length: 50 }, () => {
          const s = netConnect(server.port, '127.0.0.1');
          s.on('error', () => {});
          opened.push(s);
          return new Promise<Socket>((resolve) => s.once('connect', () => resolve(track(s))));
        }),
      );
      const partial = await Promise.all(
        Array.from({ length: 50 }, async () => {
          const s = await idleTls(server.port);
          s.on('error', () => {});
          s.write(`POST ${MUTATE_PATH} HT`);
          return track(s);
        }),
      );
      for (const s of handshaken) s.on('error', () => {});
      const all = [...handshaken, ...raw, ...partial];
      peak = Math.max(peak, await server.connections());
      clearInterval(sampling);
      assert.ok(peak >= 150, `server saw ${peak} connections`);
      await until('every idle connection to be closed', () => all.every((s) => closedAt.has(s)), 30_000);
      // Each one closed by the server after its own idle time, not before (4.9 s: timer granularity).
      const idleMs = all.map((s) => closedAt.get(s)! - lastActive.get(s)!);
      assert.ok(Math.min(...idleMs) >= 4_900, `closed after ${Math.round(Math.min(...idleMs))} ms idle`);
      assert.ok(Math.max(...idleMs) < 15_000, `closed after ${Math.round(Math.max(...idleMs))} ms idle`);
      // The server holds none of them any more: their memory is given back.
      await until('the server to hold no connection', async () => (await server.connections()) === 0, 10_000);
    } finally {
      clearInterval(sampling);
      await server.stop();
    }
  });

  test('a connection not used yet is idle, not slow: no 408 after the header and request timeouts, a review served on it, and a request that stalls on it cut off', async () => {
    // The apiserver's client (Go's transport) keeps a connection it dialed and did not need, for up to 90 s: a 408
    // written on it would be read as the answer to the next request sent on it.
    const server = await startWebhookServer({
      certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0,
      limits: { headersTimeoutMs: 200, requestTimeoutMs: 400, connectionTimeoutMs: 30_000 },
    }); // prettier-ignore
    try {
      const unused = await Promise.all([idleTls(server.port), idleTls(server.port)]);
      const received = ['', ''];
      unused.forEach((s, i) => {
        s.setEncoding('utf8');
        s.on('data', (c: string) => (received[i] += c));
      });
      // Ten header timeouts and five request timeouts, checked every 200 ms.
      await sleep(2_000);
      assert.deepEqual(received, ['', ''], 'nothing written on an unused connection');
      assert.ok(unused.every((s) => !closedAt.has(s)), 'unused connections are kept');

      const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'after-idle' }));
      unused[0]!.write(`POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      await until('the review to be answered', () => closedAt.has(unused[0]!), 10_000);
      assert.match(received[0]!, /^HTTP\/1.1 200/);
      assert.match(received[0]!, /"uid":"after-idle"/);

      // The header timeout counts from the request's first byte.
      const began = performance.now();
      unused[1]!.write(`POST ${MUTATE_PATH} HT`);
      await until('the stalled request to be cut off', () => closedAt.has(unused[1]!), 10_000);
      assert.match(received[1]!, /^HTTP\/1.1 408/);
      const after = closedAt.get(unused[1]!)! - began;
      assert.ok(after >= 190 && after < 2_000, `cut off ${Math.round(after)} ms after its first byte`);
    } finally {
      await server.stop();
    }
  }); // prettier-ignore

  test('stop() closes idle connections at once, and a connection answering a request after its response', async () => {
    const server = await startWebhookServer({ certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0 });
    const idle = await Promise.all(Array.from({ length: 3 }, () => idleTls(server.port)));
    for (const s of idle) s.on('error', () => {});
    // A request whose body is still arriving when stop() begins.
    const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'in-flight' }));
    const busy = await idleTls(server.port);
    let answer = '';
    busy.setEncoding('utf8');
    busy.on('data', (c: string) => (answer += c));
    busy.write(`POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`);
    await until('the server to see the request', async () => (await server.connections()) === 4, 10_000);
    await sleep(50);
    const t0 = performance.now();
    const stopped = server.stop();
    await until('the idle connections to be closed', () => idle.every((s) => closedAt.has(s)), 2_000);
    assert.ok(!closedAt.has(busy), 'the busy connection is kept');
    busy.write(body.slice(20));
    await stopped;
    assert.ok(performance.now() - t0 < 2_000, `stop took ${Math.round(performance.now() - t0)} ms`);
    await until('the busy connection to be closed', () => closedAt.has(busy), 2_000);
    assert.match(answer, /^HTTP\/1.1 200/);
    assert.match(answer, /"uid":"in-flight"/);
  }); // prettier-ignore

  test('while draining, each answer closes its connection (Connection: close), so no client reuses one being closed', async () => {
    const server = await startWebhookServer({ certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 1_000 });
    const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'during-drain' }));
    const request = `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const ask = async () => {
      const s = await idleTls(server.port);
      s.on('error', () => {});
      let answer = '';
      s.setEncoding('utf8');
      s.on('data', (c: string) => (answer += c));
      s.write(request);
      await until('an answer', () => /"uid":"during-drain"/.test(answer) && answer, 5_000);
      return { s, answer };
    };
    const before = await ask();
    assert.match(before.answer, /^connection: keep-alive\r$/im, 'kept alive while serving');
    before.s.destroy();
    const stopped = server.stop();
    const during = await ask();
    assert.match(during.answer, /^HTTP\/1.1 200/);
    assert.match(during.answer, /^connection: close\r$/im, 'closed after the answer while draining');
    await until('the server to close that connection', () => closedAt.has(during.s), 2_000);
    await stopped;
  }); // prettier-ignore

  for (const slowClients of [8, 64])
    test(`${slowClients} clients trickling their bodies take no slot: a review is served beside them; a body not in by the request timeout gets 408`, async () => {
      const server = await startWebhookServer({
        certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0,
        limits: { requestTimeoutMs: 2_000 },
      }); // prettier-ignore
      try {
        const slow = await Promise.all(Array.from({ length: slowClients }, () => idleTls(server.port)));
        const answers = slow.map(() => '');
        slow.forEach((s, i) => {
          s.setEncoding('utf8');
          s.on('data', (c: string) => (answers[i] += c));
          s.write(`POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
        });
        const trickle = setInterval(() => slow.forEach((s) => !s.destroyed && s.write(' ')), 500);
        try {
          await sleep(300);
          const began = performance.now();
          assert.equal(await review(server.port, { ca }, 'beside-slow'), 'beside-slow');
          const ms = performance.now() - began;
          process.stderr.write(`a review beside ${slowClients} slow senders: ${ms.toFixed(1)} ms\n`);
          await until('every slow sender cut off', () => slow.every((s) => closedAt.has(s)), 10_000);
        } finally {
          clearInterval(trickle);
        }
        for (const a of answers) assert.match(a, /^HTTP\/1.1 408 Request Timeout/);
      } finally {
        await server.stop();
      }
    }); // prettier-ignore

  test('the in-flight gauge goes back to 0 however a request ends: aborted before, during and after its body, 413, 408, answered', async () => {
    const server = await startWebhookServer({
      certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0,
      limits: { requestTimeoutMs: 1_000, bodyLimit: 64 * 1024 },
    }); // prettier-ignore
    const gauge = async () => {
      const text = await server.registry.metrics();
      return [...text.matchAll(/^controller_runtime_webhook_requests_in_flight\{[^}]*\} (\d+)/gm)].map((m) => Number(m[1]));
    };
    try {
      const body = JSON.stringify(admissionReview(daemonSetManifest(), { uid: 'g' }));
      const head = (length: number) =>
        `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
      const stages: [string, (s: TLSSocket) => Promise<void>][] = [
        ['aborted after its headers', async (s) => void s.write(head(body.length))],
        ['aborted in the middle of its body', async (s) => void s.write(head(body.length) + body.slice(0, 50))],
        ['aborted once its body is sent, before the answer', async (s) => void s.write(head(body.length) + body)],
        ['refused as too large (413)', async (s) => void s.write(head(100_000) + 'x'.repeat(70_000))],
        ['cut off by the request timeout (408)', async (s) => void s.write(head(body.length) + body.slice(0, 5))],
        ['answered', async (s) => void s.write(head(body.length) + body)],
      ];
      for (const [name, act] of stages) {
        const s = await idleTls(server.port);
        s.on('error', () => {});
        await act(s);
        await sleep(name.includes('408') ? 2_500 : 100);
        s.destroy();
        await until(`${name}: the gauge back to 0`, async () => (await gauge()).every((v) => v === 0), 5_000);
      }
      assert.ok((await gauge()).length > 0, 'the gauge exists');
    } finally {
      await server.stop();
    }
  }); // prettier-ignore

  test('one client address cannot take every connection: the webhook port and the health port keep serving others', async () => {
    const server = await startWebhookServer({
      certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0, healthPort: 0,
      limits: { maxConnectionsPerClient: 5 },
    }); // prettier-ignore
    const flood = (port: number, n: number) =>
      Promise.all(
        Array.from({ length: n }, () => {
          // Another loopback address: another client to the server.
          const s = netConnect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
          s.on('error', () => {});
          opened.push(s);
          return new Promise<Socket>((resolve) => s.once('connect', () => resolve(track(s))));
        }),
      );
    try {
      const webhookFlood = await flood(server.port, 40);
      await until('the connections beyond 5 from 127.0.0.2 closed', () => webhookFlood.filter((s) => !closedAt.has(s)).length === 5, 10_000);
      assert.equal(await review(server.port, { ca }, 'other-client'), 'other-client');
      const healthFlood = await flood(server.healthPort!, 200);
      await until('the health port keeps 8 of them', () => healthFlood.filter((s) => !closedAt.has(s)).length === 8, 10_000);
      const res = await fetch(`http://127.0.0.1:${server.healthPort}/healthz`, { signal: AbortSignal.timeout(5_000) });
      assert.equal(res.status, 200, '/healthz answers beside the flood');
    } finally {
      await server.stop();
    }
  }); // prettier-ignore

  test('beyond maxConnections new connections are closed at once; one freed is usable again', async () => {
    const server = await startWebhookServer({
      certDir: dir, port: 0, host: '127.0.0.1', logger, drainDelayMs: 0,
      limits: { maxConnections: 5 },
    }); // prettier-ignore
    try {
      const five = await Promise.all(Array.from({ length: 5 }, () => idleTls(server.port)));
      const sixth = await idleTls(server.port).then(
        () => 'handshaken',
        (err: Error) => err.message,
      );
      assert.notEqual(sixth, 'handshaken');
      assert.equal(await server.connections(), 5);
      five[0]!.destroy();
      await until('the server to see the close', async () => (await server.connections()) === 4, 10_000);
      assert.equal(await review(server.port, { ca }, 'after-cap'), 'after-cap');
    } finally {
      await server.stop();
    }
  });
});
