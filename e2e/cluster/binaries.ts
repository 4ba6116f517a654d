// Where the upstream control-plane binaries live and how to get them built. The versions and the
// cache layout are shared with e2e/hack/build-control-plane.sh (versions.json is read by both).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserError } from '../../src/cli/command.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = join(here, '..', '..');

export const versions = JSON.parse(readFileSync(join(here, 'versions.json'), 'utf8')) as {
  kubernetes: string;
  kwok: string;
  helm: string;
  containerd: string;
  'cri-tools': string;
  'go-containerregistry': string;
};

export function cacheDir(): string {
  return (
    process.env.ADS_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'advanced-daemonset')
  );
}

export function binaries() {
  const k8s = join(cacheDir(), 'bin', `k8s-${versions.kubernetes}`);
  return {
    etcd: join(k8s, 'etcd'),
    kubeApiserver: join(k8s, 'kube-apiserver'),
    kubeControllerManager: join(k8s, 'kube-controller-manager'),
    kubeScheduler: join(k8s, 'kube-scheduler'),
    kubectl: join(k8s, 'kubectl'),
    kwok: join(cacheDir(), 'bin', `kwok-${versions.kwok}`, 'kwok'),
    helm: join(cacheDir(), 'bin', `helm-${versions.helm}`, 'helm'),
  };
}

/** What a real node runs and `cluster down` uses (e2e/hack/build-node.sh builds them; runc and CNI are Debian's). */
export function nodeBinaries() {
  const bin = join(cacheDir(), 'bin');
  const containerd = join(bin, `containerd-${versions.containerd}`);
  return {
    kubelet: join(bin, `k8s-${versions.kubernetes}`, 'kubelet'),
    pause: join(bin, `k8s-${versions.kubernetes}`, 'pause'),
    containerd: join(containerd, 'containerd'),
    containerdShim: join(containerd, 'containerd-shim-runc-v2'),
    ctr: join(containerd, 'ctr'),
    crictl: join(bin, `cri-tools-${versions['cri-tools']}`, 'crictl'),
    crane: join(bin, `go-containerregistry-${versions['go-containerregistry']}`, 'crane'),
  };
}

export function binariesPresent(): boolean {
  return Object.values(binaries()).every((p) => existsSync(p));
}

/**
 * Builds whatever is missing (a no-op when the cache is warm), streaming the script's progress
 * lines to `out`. Failures carry the script's own message (failing command + log tail).
 */
export async function ensureBinaries(out: NodeJS.WritableStream = process.stderr): Promise<void> {
  if (binariesPresent()) return;
  await runBuildScript('build-control-plane.sh', out);
}

/** Builds the real node's binaries (after the control plane's, whose Kubernetes module the kubelet reuses). */
export async function ensureNodeBinaries(out: NodeJS.WritableStream = process.stderr): Promise<void> {
  await ensureBinaries(out);
  if (Object.values(nodeBinaries()).every((p) => existsSync(p))) return;
  await runBuildScript('build-node.sh', out);
}

async function runBuildScript(name: string, out: NodeJS.WritableStream): Promise<void> {
  const script = join(repoRoot, 'e2e', 'hack', name);
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', reject);
    child.on('exit', (c) => resolve(c ?? 1));
  });
  if (code === 3) throw new UserError('Go is required to build the local control plane; install Go >= 1.26', 3);
  if (code !== 0) throw new UserError(`${name} failed (exit ${code}); see the messages above`, 4);
}
