// The benchmarks' stage file: the test clusters' own, with only the node heartbeat's delay changed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { kwokStages } from '../e2e/cluster/cluster.ts';

interface Stage {
  metadata: { name: string };
  spec: { delay?: { durationMilliseconds: number; jitterDurationMilliseconds: number } };
}
const stagesOf = (file: string) => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as Stage);

describe('kwokStages', () => {
  test('by default: the repository stage file and a 60 s grace period', () => {
    const { file, gracePeriodSeconds } = kwokStages('/nonexistent');
    assert.match(file, /e2e\/cluster\/kwok-stages\.yaml$/);
    assert.equal(gracePeriodSeconds, 60);
    const heartbeat = stagesOf(file).find((s) => s.metadata.name === 'node-heartbeat');
    assert.deepEqual(heartbeat?.spec.delay, { durationMilliseconds: 20_000, jitterDurationMilliseconds: 25_000 });
  });

  test('a heartbeat every 300 s: a copy whose node-heartbeat delay alone differs, and a grace period of two heartbeats', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ads-kwok-stages-'));
    try {
      const base = kwokStages(dir);
      const slow = kwokStages(dir, 300);
      assert.equal(slow.file, join(dir, 'kwok-stages.yaml'));
      assert.equal(slow.gracePeriodSeconds, 720);
      const before = stagesOf(base.file);
      const after = stagesOf(slow.file);
      assert.equal(after.length, before.length);
      for (const [i, stage] of after.entries()) {
        if (stage.metadata.name !== 'node-heartbeat') assert.deepEqual(stage, before[i]);
        else {
          assert.deepEqual(stage.spec.delay, { durationMilliseconds: 300_000, jitterDurationMilliseconds: 60_000 });
          assert.deepEqual({ ...stage.spec, delay: undefined }, { ...before[i]!.spec, delay: undefined });
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
