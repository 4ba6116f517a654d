// `advanced-daemonset certs`: a private CA and a serving certificate for running the webhook on
// your machine or for certificates.mode=external (kubectl create secret tls ... --cert --key).
import { existsSync, mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import {
  flagsHelp,
  intFlag,
  defineCommand,
  stringFlag,
  stringsFlag,
  switchFlag,
  UserError,
  type Flags,
} from '../src/cli/command.ts';
import { writeFileWithMode } from '../src/pki/pki.ts';
import { newServingCertificate } from './webhook-config.ts';

const flags = {
  out: stringFlag('directory to write to (created if missing)', { arg: 'DIR' }),
  host: stringsFlag(
    'IP address or DNS name the apiserver uses to reach the webhook; repeatable, e.g. --host 127.0.0.1 --host ads-webhook.kruise-system.svc',
    'HOST',
  ),
  days: intFlag('serving certificate lifetime in days', 365),
  'ca-days': intFlag('CA lifetime in days', 3650),
  force: switchFlag('overwrite existing files in DIR'),
} satisfies Flags;

const usage = `Usage: advanced-daemonset certs --out DIR --host HOST [--host HOST ...] [flags]

Generates a private CA and a serving certificate signed by it (ECDSA P-256) and writes
  ca.crt   the CA certificate: the webhook configurations' caBundle (base64 of this file)
  ca.key   the CA private key (keep it, or delete it if you never sign another certificate)
  tls.crt  the serving certificate, valid for every --host
  tls.key  its private key
The webhook and the manager read tls.crt and tls.key from --cert-dir.

Flags:
${flagsHelp(flags)}
`;

const FILES = ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'] as const;

/** An IP address, or a DNS name of lowercase RFC 1123 labels (a leading "*." allowed). */
export function validHost(host: string): boolean {
  if (isIP(host) !== 0) return true;
  return /^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/.test(host);
}

export const certsCommand = defineCommand({
  name: 'certs',
  summary: 'Generate a CA and a webhook serving certificate for local use',
  usage,
  flags,
  async run({ values }) {
    const { out, host: hosts, days, 'ca-days': caDays, force } = values;
    if (!out) throw new UserError('certs: --out DIR is required\nRun with --help for usage.', 2);
    if (hosts.length === 0)
      throw new UserError('certs: at least one --host is required\nRun with --help for usage.', 2);
    const bad = hosts.filter((h) => !validHost(h));
    if (bad.length > 0) {
      throw new UserError(`certs: not an IP address or DNS name: ${bad.map((h) => `"${h}"`).join(', ')}`, 2);
    }
    if (days < 1 || caDays < days) {
      throw new UserError(`certs: need 1 <= --days (${days}) <= --ca-days (${caDays})`, 2);
    }
    const present = FILES.filter((f) => existsSync(join(out, f)));
    if (present.length > 0 && !force) {
      throw new UserError(
        `certs: ${present.map((f) => join(out, f)).join(', ')} already exist; use --force to overwrite`,
      );
    }

    const { ca, leaf } = await newServingCertificate(hosts, { validityDays: days, caValidityDays: caDays });
    try {
      mkdirSync(out, { recursive: true });
      writeFileWithMode(join(out, 'ca.crt'), ca.certPem, 0o644);
      writeFileWithMode(join(out, 'ca.key'), ca.keyPem, 0o600);
      writeFileWithMode(join(out, 'tls.crt'), leaf.certPem, 0o644);
      writeFileWithMode(join(out, 'tls.key'), leaf.keyPem, 0o600);
    } catch (err) {
      throw new UserError(`certs: cannot write to ${out}: ${(err as Error).message}`);
    }
    console.log(`wrote ${FILES.map((f) => join(out, f)).join(', ')}`);
    console.log(`serving certificate for ${hosts.join(', ')}, valid ${days} days; CA valid ${caDays} days`);
    return 0;
  },
});
