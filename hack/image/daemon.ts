// The test daemon image (advanced-daemonset-test-daemon) for rollouts on the local cluster's real nodes: Debian's
// static busybox and a POSIX sh script, no libraries. Tags v1, v2 and v3 serve (each with its version baked in, so
// their digests differ); crashloop crashes. The first layer is the same for every tag, so it is pushed once.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stageLayer, type LayerPlan } from './layers.ts';
import { buildAndPush, writeLayer, type ImageConfig } from './oci.ts';
import { requireTool } from './tools.ts';

export const DAEMON_IMAGE = 'advanced-daemonset-test-daemon';
export const DAEMON_PORT = 8080;
/** The tags, and the DAEMON_MODE each defaults to. */
export const DAEMON_TAGS = { v1: 'serve', v2: 'serve', v3: 'serve', crashloop: 'crash' } as const;
export type DaemonTag = keyof typeof DAEMON_TAGS;

/** busybox-static's binary (e2e/hack/install-node-packages.sh installs it): static, so it needs no libraries. */
const BUSYBOX = '/bin/busybox';
const APPLETS = ['sh', 'cat', 'date', 'echo', 'id', 'env', 'httpd', 'kill', 'ls', 'ps', 'rm', 'sleep', 'touch', 'wget'];
const NONROOT = 65532;

/**
 * DAEMON_MODE (the image's ENV sets the tag's default; a pod's env overrides it):
 *   serve  httpd on $PORT (8080): GET /ready is 200, GET /version the image's version
 *   crash  no server; exit 1 after CRASH_AFTER_SECONDS (whole seconds, default 2): the kubelet restarts it, into
 *          CrashLoopBackOff
 *   exit   serve, then exit 0 after EXIT_AFTER_SECONDS (whole seconds, default 5)
 * In any mode, creating /tmp/exit or /tmp/crash (kubectl exec ... touch /tmp/exit) makes it exit 0 or 1 within a
 * second; the file is removed first, so the restarted container (an emptyDir at /tmp outlives it) serves again.
 * /tmp is the image's (mode 1777) or the pod's emptyDir, for a read-only root filesystem.
 */
export const DAEMON_SCRIPT = `#!/bin/sh
# The test daemon of hack/image/daemon.ts (modes: there).
version=$(cat /www/version)
mode=\${DAEMON_MODE:-serve}
port=\${PORT:-${DAEMON_PORT}}
say() { echo "test-daemon $version ($mode): $*"; }
# Centiseconds since boot (date +%s would make a 2 s deadline anything from 1 to 2 s).
now() {
  read -r up _ </proc/uptime
  echo "\${up%.*}\${up#*.}"
}
deadline=
code=0
case "$mode" in
serve) ;;
crash) deadline=\${CRASH_AFTER_SECONDS:-2} code=1 ;;
exit) deadline=\${EXIT_AFTER_SECONDS:-5} code=0 ;;
*)
  say "unknown DAEMON_MODE: serve, crash or exit"
  exit 2
  ;;
esac
httpd=
if [ "$mode" != crash ]; then
  httpd -f -p "$port" -h /www &
  httpd=$!
fi
stop() {
  if [ -n "$httpd" ]; then kill "$httpd" 2>/dev/null; fi
  say "exit $1 ($2)"
  exit "$1"
}
trap 'stop 0 SIGTERM' TERM INT
say "started\${httpd:+, serving on port $port}"
start=$(now)
while :; do
  if [ -e /tmp/exit ]; then rm -f /tmp/exit; stop 0 /tmp/exit; fi
  if [ -e /tmp/crash ]; then rm -f /tmp/crash; stop 1 /tmp/crash; fi
  if [ -n "$deadline" ] && [ $(($(now) - start)) -ge $((deadline * 100)) ]; then stop "$code" "after \${deadline}s"; fi
  if [ -n "$httpd" ] && ! kill -0 "$httpd" 2>/dev/null; then stop 1 "httpd exited"; fi
  sleep 0.2
done
`;

/** The layer every tag shares: busybox, its applets, the script, users, /tmp. */
export const DAEMON_BASE_LAYER: LayerPlan = {
  name: 'daemon-base',
  description: `busybox (Debian busybox-static) and /daemon.sh`,
  entries: [
    { kind: 'copy', path: '/bin/busybox', source: 'busybox' },
    ...APPLETS.map((a) => ({ kind: 'symlink' as const, path: `/bin/${a}`, target: 'busybox' })),
    { kind: 'file', path: '/daemon.sh', text: DAEMON_SCRIPT, mode: 0o755 },
    {
      kind: 'file',
      path: '/etc/passwd',
      text: `root:x:0:0:root:/root:/bin/sh\nnonroot:x:${NONROOT}:${NONROOT}:nonroot:/tmp:/bin/sh\n`,
    },
    { kind: 'file', path: '/etc/group', text: `root:x:0:\nnonroot:x:${NONROOT}:\n` },
    { kind: 'dir', path: '/tmp', mode: 0o1777 },
  ],
};

/** The layer of one tag: what httpd serves. */
export function daemonVersionLayer(tag: DaemonTag): LayerPlan {
  return {
    name: `daemon-${tag}`,
    description: `/www: /ready and /version (${tag})`,
    entries: [
      { kind: 'file', path: '/www/ready', text: 'ok\n' },
      { kind: 'file', path: '/www/version', text: `${tag}\n` },
    ],
  };
}

export function daemonConfig(tag: DaemonTag): ImageConfig {
  return {
    entrypoint: ['/bin/sh', '/daemon.sh'],
    env: ['PATH=/bin', `DAEMON_MODE=${DAEMON_TAGS[tag]}`],
    user: `${NONROOT}:${NONROOT}`,
    workdir: '/',
    exposedPorts: [`${DAEMON_PORT}/tcp`],
    labels: { 'org.opencontainers.image.title': DAEMON_IMAGE, 'org.opencontainers.image.version': tag },
  };
}

/** Pushes REGISTRY/advanced-daemonset-test-daemon:{v1,v2,v3,crashloop}; returns the references by tag. */
export async function pushTestDaemonImages(
  registry: string,
  progress: (line: string) => void = () => {},
): Promise<Record<DaemonTag, string>> {
  const busybox = requireTool(BUSYBOX, 'busybox (Debian busybox-static)');
  const work = mkdtempSync(join(tmpdir(), 'ads-daemon-'));
  try {
    const sources = { busybox };
    const layer = async (plan: LayerPlan) => {
      const parts = await stageLayer(plan, { dir: join(work, plan.name), sources, progress });
      const file = join(work, `${plan.name}.tar.gz`);
      await writeLayer(parts, file);
      return file;
    };
    const base = await layer(DAEMON_BASE_LAYER);
    const refs = {} as Record<DaemonTag, string>;
    for (const tag of Object.keys(DAEMON_TAGS) as DaemonTag[]) {
      const version = daemonVersionLayer(tag);
      const pushed = await buildAndPush({
        ref: `${registry}/${DAEMON_IMAGE}:${tag}`,
        layers: [base, await layer(version)],
        config: daemonConfig(tag),
        history: [DAEMON_BASE_LAYER, version].map((l) => `${l.name}: ${l.description}`),
      });
      progress(`pushed ${pushed.ref}@${pushed.digest}`);
      refs[tag] = pushed.ref;
    }
    return refs;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
