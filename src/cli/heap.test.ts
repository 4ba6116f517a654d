// The heap limit from the cgroup memory limit: parsing the v1 and v2 files, the share, and when no flag is added.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cgroupLimitFiles,
  heapFlags,
  MIN_OLD_SPACE_MIB,
  oldSpaceSizeMiB,
  parseMemoryLimit,
  readMemoryLimit,
} from './heap.ts';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const machine = 16 * GiB;

describe('parseMemoryLimit', () => {
  const rows: { name: string; text: string | undefined; want: number | undefined }[] = [
    { name: 'v2 bytes', text: '536870912\n', want: 512 * MiB },
    { name: 'v2 unlimited', text: 'max\n', want: undefined },
    { name: 'v1 bytes', text: '268435456', want: 256 * MiB },
    { name: 'v1 unlimited (page-rounded 2^63)', text: '9223372036854771712\n', want: undefined },
    { name: 'missing file', text: undefined, want: undefined },
    { name: 'empty', text: '', want: undefined },
    { name: 'garbage', text: '12abc', want: undefined },
    { name: 'zero', text: '0', want: undefined },
  ];
  for (const r of rows) test(r.name, () => assert.equal(parseMemoryLimit(r.text), r.want));
});

describe('oldSpaceSizeMiB', () => {
  const rows: { name: string; limit: number | undefined; want: number | undefined }[] = [
    { name: "the chart's 512Mi: 60%", limit: 512 * MiB, want: 307 },
    { name: '1Gi', limit: 1 * GiB, want: 614 },
    { name: 'a tiny limit gets the floor', limit: 64 * MiB, want: MIN_OLD_SPACE_MIB },
    { name: 'no limit: V8 default', limit: undefined, want: undefined },
    { name: 'limit above the machine: V8 default', limit: 64 * GiB, want: undefined },
  ];
  for (const r of rows) test(r.name, () => assert.equal(oldSpaceSizeMiB(r.limit, machine), r.want));
});

describe('heapFlags', () => {
  const rows: { name: string; execArgv: string[]; nodeOptions?: string; limit: number | undefined; want: string[] }[] = [
    { name: 'limit set: flag added', execArgv: ['--max-semi-space-size=16'], limit: 512 * MiB, want: ['--max-old-space-size=307'] },
    { name: 'no limit: nothing', execArgv: [], limit: undefined, want: [] },
    { name: 'flag on the command line wins', execArgv: ['--max-old-space-size=200'], limit: 512 * MiB, want: [] },
    { name: 'underscore spelling wins too', execArgv: ['--max_old_space_size=200'], limit: 512 * MiB, want: [] },
    { name: 'percentage flag wins', execArgv: ['--max-old-space-size-percentage=50'], limit: 512 * MiB, want: [] },
    { name: 'NODE_OPTIONS wins', execArgv: [], nodeOptions: '--trace-warnings --max-old-space-size=100', limit: 512 * MiB, want: [] },
    { name: 'an unrelated flag with a similar name does not', execArgv: ['--max-semi-space-size=16'], nodeOptions: '--max-http-header-size=1', limit: 1 * GiB, want: ['--max-old-space-size=614'] },
  ]; // prettier-ignore
  for (const r of rows)
    test(r.name, () => assert.deepEqual(heapFlags(r.execArgv, r.nodeOptions, r.limit, machine), r.want));
});

describe('readMemoryLimit', () => {
  const rows: { name: string; files: Record<string, string>; want: number | undefined }[] = [
    {
      name: 'cgroup v2 with a namespace (a pod): the mount root',
      files: { '/proc/self/cgroup': '0::/\n', '/sys/fs/cgroup/memory.max': '536870912\n' },
      want: 512 * MiB,
    },
    {
      name: 'cgroup v2 without a namespace: the own cgroup path first',
      files: {
        '/proc/self/cgroup': '0::/kubepods/burstable/pod1/c1\n',
        '/sys/fs/cgroup/kubepods/burstable/pod1/c1/memory.max': '268435456\n',
        '/sys/fs/cgroup/memory.max': 'max\n',
      },
      want: 256 * MiB,
    },
    {
      name: 'cgroup v1',
      files: {
        '/proc/self/cgroup': '4:memory:/docker/abc\n0::/\n',
        '/sys/fs/cgroup/memory/memory.limit_in_bytes': '536870912\n',
      },
      want: 512 * MiB,
    },
    {
      name: 'cgroup v1 unlimited',
      files: {
        '/proc/self/cgroup': '4:memory:/\n',
        '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712',
      },
      want: undefined,
    },
    { name: 'no cgroup files (not Linux)', files: {}, want: undefined },
  ];
  for (const r of rows)
    test(r.name, () =>
      assert.equal(
        readMemoryLimit((p) => r.files[p]),
        r.want,
      ),
    );

  test('files tried in order', () => {
    assert.deepEqual(cgroupLimitFiles('0::/a/b\n'), [
      '/sys/fs/cgroup/a/b/memory.max',
      '/sys/fs/cgroup/memory.max',
      '/sys/fs/cgroup/memory/memory.limit_in_bytes',
    ]);
  });
});
