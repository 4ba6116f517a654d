// The bind-address flags of the manager and controller commands (controller-runtime's names), beside the older
// --health-port / --metrics-port.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { UserError } from '../../src/cli/command.ts';
import { bindAddressFlag } from './manager.ts';

describe('bindAddressFlag', () => {
  /** The metrics flags as the command passes them: --metrics-port counts as set only when given. */
  const bind = (row: { address?: string; port?: string }) =>
    bindAddressFlag(
      'metrics-bind-address',
      row.address,
      'metrics-port',
      Number(row.port ?? 8080),
      row.port !== undefined,
    );

  const rows: { name: string; address?: string; port?: string; want: { host: string; port: number } }[] = [
    { name: 'neither: every address, the default port', want: { host: '0.0.0.0', port: 8080 } },
    { name: 'the old port flag', port: '9090', want: { host: '0.0.0.0', port: 9090 } },
    { name: 'loopback only', address: '127.0.0.1:8080', want: { host: '127.0.0.1', port: 8080 } },
    { name: 'an empty host is every address', address: ':8443', want: { host: '0.0.0.0', port: 8443 } },
    { name: 'IPv6 in brackets', address: '[::1]:8080', want: { host: '::1', port: 8080 } },
    { name: 'a pod IP', address: '10.1.2.3:0', want: { host: '10.1.2.3', port: 0 } },
  ];
  for (const row of rows)
    test(row.name, () => {
      assert.deepEqual(bind(row), row.want);
    });

  const refused: { name: string; address: string; port?: string; message: RegExp }[] = [
    { name: 'no port', address: '127.0.0.1', message: /must be HOST:PORT/ },
    { name: 'a port out of range', address: ':70000', message: /must be HOST:PORT/ },
    { name: 'IPv6 without brackets', address: '::1:8080', message: /must be HOST:PORT/ },
    { name: 'both flags', address: ':8080', port: '8080', message: /cannot both be set/ },
  ];
  for (const row of refused)
    test(`refuses ${row.name}`, () =>
      assert.throws(
        () => bind(row),
        (e: unknown) => e instanceof UserError && row.message.test(e.message),
      ));
});
