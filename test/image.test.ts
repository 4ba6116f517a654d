// The image runs what the benchmark measures: the Dockerfile's ENTRYPOINT has the Node flags of hack/bundle.ts
// (NODE_RUNTIME_FLAGS) and its ENV the environment (NODE_RUNTIME_ENV), and the bundle is ASCII, so V8 stores its
// source one byte per character, and loads Node's built-ins without their ES facades (hack/bundle.ts).
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
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

  describe('the bundle', () => {
    // Inside the repository, so that the bundle's imports of npm packages resolve as they do from dist/.
    const dir = join(root, 'node_modules', '.cache', `ads-bundle-test-${process.pid}`);
    before(() => bundle(PRODUCT_ENTRY, join(dir, 'main.mjs')));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('it and its admission worker hold ASCII only', () => {
      for (const file of ['main.mjs', 'admission-worker.mjs']) {
        const text = readFileSync(join(dir, file), 'utf8');
        const at = text.search(/[^\x00-\x7f]/u); // eslint-disable-line no-control-regex
        assert.equal(at, -1, `${file}: a non-ASCII character near ${JSON.stringify(text.slice(at - 40, at + 40))}`);
      }
    });

    test("it imports Node's built-ins through process.getBuiltinModule, so no lazy export of theirs loads", () => {
      for (const file of ['main.mjs', 'admission-worker.mjs']) {
        const text = readFileSync(join(dir, file), 'utf8');
        assert.doesNotMatch(text, /(?:^import[^;]*|import\()["']node:/mu, `${file}: an ES import of a built-in`);
      }
      // Loading the bundle (--help runs nothing else) must not load undici, which node:http's ES facade would.
      const report = 'data:text/javascript,process.on("exit",()=>console.log(JSON.stringify(process.moduleLoadList)))';
      const out = execFileSync(process.execPath, ['--import', report, join(dir, 'main.mjs'), '--help'], {
        encoding: 'utf8',
      });
      const loaded = JSON.parse(out.trim().split('\n').pop()!) as string[];
      assert.ok(loaded.includes('NativeModule http'), 'the bundle loads node:http');
      assert.deepEqual(
        loaded.filter((m) => /undici|webstreams/.test(m)),
        [],
      );
    });
  });
});
