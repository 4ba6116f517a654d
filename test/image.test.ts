// The image runs what the benchmark measures: the Dockerfile's ENTRYPOINT has the Node flags of hack/bundle.ts
// (NODE_RUNTIME_FLAGS) and its ENV the environment (NODE_RUNTIME_ENV), and the bundle is ASCII, so V8 stores its source one byte per character.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle, NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS, PRODUCT_ENTRY } from '../hack/bundle.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

describe('the image', () => {
  test("the Dockerfile's ENTRYPOINT runs the launcher with NODE_RUNTIME_FLAGS", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const line = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    assert.ok(line, 'an exec-form ENTRYPOINT');
    assert.deepEqual(JSON.parse(line) as string[], ['/nodejs/bin/node', ...NODE_RUNTIME_FLAGS, '/app/dist/launch.mjs']);
  });

  test("the Dockerfile's final stage sets NODE_RUNTIME_ENV", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    for (const [k, v] of Object.entries(NODE_RUNTIME_ENV)) assert.match(runtime, new RegExp(`^ENV ${k}=${v}$`, 'm'));
  });

  test('the bundle and its admission worker hold ASCII only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ads-bundle-'));
    try {
      await bundle(PRODUCT_ENTRY, join(dir, 'main.mjs'));
      for (const file of ['main.mjs', 'admission-worker.mjs']) {
        const text = readFileSync(join(dir, file), 'utf8');
        const at = text.search(/[^\x00-\x7f]/u); // eslint-disable-line no-control-regex
        assert.equal(at, -1, `${file}: a non-ASCII character near ${JSON.stringify(text.slice(at - 40, at + 40))}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
