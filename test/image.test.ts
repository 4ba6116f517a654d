// The image runs what the benchmark measures: the Dockerfile's ENTRYPOINT has the Node flags of hack/bundle.ts
// (NODE_RUNTIME_FLAGS) and its ENV the environment (NODE_RUNTIME_ENV), and the bundle is ASCII, so V8 stores its
// source one byte per character, and loads Node's built-ins without their ES facades (hack/bundle.ts).
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle, COMPANION_SCRIPTS, NODE_RUNTIME_ENV, NODE_RUNTIME_FLAGS, PRODUCT_ENTRY } from '../hack/bundle.ts';
import {
  DAEMON_BASE_LAYER,
  DAEMON_SCRIPT,
  DAEMON_TAGS,
  daemonConfig,
  daemonVersionLayer,
} from '../hack/image/daemon.ts';
import { parseFinalStage } from '../hack/image/dockerfile.ts';
import { kept, planPaths, usrMerged } from '../hack/image/layers.ts';
import { DISTROLESS_NODEJS24_DEBIAN12, managerPlan } from '../hack/image/manager.ts';
import { isLocalRegistry, runConfig } from '../hack/image/oci.ts';
import { PAUSE_CONFIG, PAUSE_LAYER } from '../hack/image/pause.ts';

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
    const bundled = ['main.mjs', ...COMPANION_SCRIPTS.map((c) => c.file)];
    before(() => bundle(PRODUCT_ENTRY, join(dir, 'main.mjs')));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('it, its admission worker and its certificate issuer hold ASCII only', () => {
      for (const file of bundled) {
        const text = readFileSync(join(dir, file), 'utf8');
        const at = text.search(/[^\x00-\x7f]/u); // eslint-disable-line no-control-regex
        assert.equal(at, -1, `${file}: a non-ASCII character near ${JSON.stringify(text.slice(at - 40, at + 40))}`);
      }
    });

    test("it imports Node's built-ins through process.getBuiltinModule, so no lazy export of theirs loads", () => {
      for (const file of bundled) {
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

// The Docker-less build (npm run image, hack/image/manager.ts) reads the Dockerfile's final stage: its config must
// be what the Dockerfile says, read here line by line without the recipe's parser, and its layers must hold what
// the stage copies and runs.
describe('the image without Docker (hack/image)', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const lines = (keyword: string) =>
    [...finalStage.matchAll(new RegExp(`^${keyword} (.*)$`, 'gm'))].map((m) => m[1]!.trim());
  const plan = managerPlan(parseFinalStage(dockerfile), '1.2.3');

  test("the config is the final stage's ENTRYPOINT, CMD, USER, WORKDIR, EXPOSE and ENV", () => {
    assert.deepEqual(plan.config.entrypoint, JSON.parse(lines('ENTRYPOINT').at(-1)!));
    assert.deepEqual(plan.config.cmd, JSON.parse(lines('CMD').at(-1)!));
    assert.equal(plan.config.user, lines('USER').at(-1));
    assert.equal(plan.config.workdir, lines('WORKDIR').at(-1));
    assert.deepEqual(
      plan.config.exposedPorts,
      lines('EXPOSE').flatMap((l) => l.split(/\s+/).map((p) => `${p}/tcp`)),
    );
    const env = lines('ENV').map((l) => l.replace(/^(\w+) /, '$1='));
    assert.ok(env.length > 0);
    // The stage's ENV after the base image's (distroless sets PATH and SSL_CERT_FILE), in order.
    assert.deepEqual(plan.config.env, [...DISTROLESS_NODEJS24_DEBIAN12.env, ...env]);
    assert.equal(plan.config.labels?.['org.opencontainers.image.version'], '1.2.3');
  });

  test('the layers hold every COPY destination of the final stage and the entrypoint binary', () => {
    const workdir = lines('WORKDIR').at(-1)!;
    const copies = lines('COPY').map((l) => l.split(/\s+/).at(-1)!);
    assert.deepEqual(copies, ['./node_modules', './dist']);
    const paths = planPaths(plan.layers);
    for (const dest of copies) assert.ok(paths.includes(`${workdir}/${dest.slice(2)}`), `${dest} in ${paths}`);
    assert.ok(paths.includes(plan.config.entrypoint![0]!), 'the entrypoint binary');
    assert.ok(paths.includes('/app/node_modules') && paths.includes('/app/dist') && paths.includes('/nodejs/bin/node'));
    // What changes least first: a rebuild after a code change pushes the last layer only.
    assert.deepEqual(
      plan.layers.map((l) => l.name),
      ['base', 'nodejs', 'node_modules', 'dist'],
    );
  });

  test('the base stands in for distroless: users, /tmp, /home/nonroot, CA bundle, the C and C++ runtime', () => {
    const base = plan.layers[0]!.entries;
    const byPath = new Map(base.map((e) => [e.path, e]));
    assert.deepEqual(byPath.get('/tmp'), { kind: 'dir', path: '/tmp', mode: 0o1777 });
    assert.deepEqual(byPath.get('/home/nonroot'), { kind: 'dir', path: '/home/nonroot', mode: 0o700, owner: 65532 });
    const passwd = byPath.get('/etc/passwd');
    assert.ok(passwd?.kind === 'file');
    assert.match(passwd.text, /^root:x:0:0:/m);
    assert.match(passwd.text, /^nonroot:x:65532:65532:nonroot:\/home\/nonroot:/m);
    assert.ok(byPath.has('/etc/ssl/certs/ca-certificates.crt'));
    const debs = base.find((e) => e.kind === 'debs');
    assert.ok(debs?.kind === 'debs');
    const names = debs.packages.map((p) => p.name);
    for (const p of ['libc6', 'libstdc++6', 'libgcc-s1', 'ca-certificates', 'tzdata']) assert.ok(names.includes(p), p);
  });

  test('which files of a package are kept, and where merged /usr puts them', () => {
    const libc = { name: 'libc6', keep: ['lib/x86_64-linux-gnu/', 'lib64/'] };
    assert.equal(kept(libc, 'lib/x86_64-linux-gnu/libc.so.6'), true);
    assert.equal(kept(libc, 'usr/lib/x86_64-linux-gnu/gconv/IBM1390.so'), false);
    assert.equal(kept(libc, 'usr/share/doc/libc6/changelog.gz'), false);
    assert.equal(kept(libc, 'usr/share/doc/libc6/copyright'), true);
    assert.equal(kept({ name: 'base-files', keep: ['etc/os-release'] }, 'etc/os-release'), true);
    assert.equal(kept({ name: 'base-files', keep: ['etc/os-release'] }, 'etc/os-release.d'), false);
    assert.equal(usrMerged('lib/x86_64-linux-gnu/libc.so.6'), 'usr/lib/x86_64-linux-gnu/libc.so.6');
    assert.equal(usrMerged('lib64/ld-linux-x86-64.so.2'), 'usr/lib64/ld-linux-x86-64.so.2');
    assert.equal(usrMerged('usr/share/zoneinfo/UTC'), 'usr/share/zoneinfo/UTC');
    assert.equal(usrMerged('library/x'), 'library/x');
  });

  test('the recipe refuses a Dockerfile it cannot follow', () => {
    const stage = (text: string) => parseFinalStage(`FROM ${DISTROLESS_NODEJS24_DEBIAN12.image}\n${text}`);
    assert.throws(() => managerPlan(parseFinalStage('FROM debian:12\n'), '1'), /stand-in for/);
    assert.throws(() => managerPlan(stage('COPY --from=build /app/other ./other\n'), '1'), /does not make/);
    assert.throws(() => stage('RUN echo hi\n'), /line 2 \(RUN\)/);
    assert.throws(() => stage('ENTRYPOINT node main.js\n'), /exec form/);
    assert.throws(() => stage('COPY --chown=1:1 a b\n'), /unsupported flag --chown=1:1/);
  });

  test('the Dockerfile reader: continuations, ENV pairs, ARG in FROM, WORKDIR and EXPOSE', () => {
    const stage = parseFinalStage(
      [
        'ARG BASE=img:1',
        'FROM golang AS build',
        'ENV IGNORED=1',
        '# a comment',
        'FROM ${BASE}',
        'WORKDIR /srv',
        'WORKDIR app',
        'ENV A=1 B="two words" \\',
        '    C=3',
        'ENV LEGACY value with spaces',
        'EXPOSE 80 53/udp',
        'COPY --from=build /out ./bin/',
        'ENTRYPOINT ["/bin/x", "--flag=a,b"]',
        'LABEL k=v',
        '',
      ].join('\n'),
    );
    assert.equal(stage.base, 'img:1');
    assert.equal(stage.workdir, '/srv/app');
    assert.deepEqual(stage.env, [
      ['A', '1'],
      ['B', 'two words'],
      ['C', '3'],
      ['LEGACY', 'value with spaces'],
    ]);
    assert.deepEqual(stage.exposedPorts, ['80/tcp', '53/udp']);
    assert.deepEqual(stage.copies, [{ from: 'build', sources: ['/out'], dest: '/srv/app/bin' }]);
    assert.deepEqual(stage.entrypoint, ['/bin/x', '--flag=a,b']);
    assert.equal(stage.cmd, undefined);
    assert.deepEqual(stage.labels, [['k', 'v']]);
  });

  test('the image config JSON has the spec field names', () => {
    const config = {
      entrypoint: ['/x', '--a=1,2'],
      cmd: ['run'],
      env: ['A=1'],
      user: '1:1',
      workdir: '/w',
      exposedPorts: ['80/tcp'],
      labels: { k: 'v' },
    };
    assert.deepEqual(runConfig(config), {
      User: '1:1',
      ExposedPorts: { '80/tcp': {} },
      Env: ['A=1'],
      Entrypoint: ['/x', '--a=1,2'],
      Cmd: ['run'],
      WorkingDir: '/w',
      Labels: { k: 'v' },
    });
    assert.deepEqual(runConfig({ entrypoint: ['/pause'] }), { Entrypoint: ['/pause'] });
  });

  test('the test daemon: a POSIX sh script, a shared first layer, its version baked into the second', () => {
    // dash is POSIX sh without busybox's extensions: if it parses the script, busybox's ash does.
    execFileSync('sh', ['-n'], { input: DAEMON_SCRIPT });
    const versions = Object.keys(DAEMON_TAGS).map((t) => daemonVersionLayer(t as keyof typeof DAEMON_TAGS));
    assert.equal(new Set(versions.map((l) => JSON.stringify(l.entries))).size, 4, 'each tag its own layer');
    assert.deepEqual(daemonConfig('crashloop').env, ['PATH=/bin', 'DAEMON_MODE=crash']);
    assert.deepEqual(daemonConfig('v2').env, ['PATH=/bin', 'DAEMON_MODE=serve']);
    assert.ok(planPaths([DAEMON_BASE_LAYER]).includes('/bin/busybox'));
    assert.ok(planPaths([DAEMON_BASE_LAYER]).includes(daemonConfig('v1').entrypoint![1]!));
  });

  test('the pause image is laid out as upstream: /pause, user 65535', () => {
    assert.deepEqual(planPaths([PAUSE_LAYER]), ['/pause']);
    assert.deepEqual(PAUSE_CONFIG, { entrypoint: ['/pause'], user: '65535:65535' });
  });

  test('plain HTTP only to a registry on this machine', () => {
    for (const r of ['127.0.0.1:5000', 'localhost:5000', '[::1]:5000', '127.0.0.2']) assert.ok(isLocalRegistry(r), r);
    for (const r of ['registry.example:5000', 'ghcr.io', '10.0.0.1:5000']) assert.ok(!isLocalRegistry(r), r);
  });
});
