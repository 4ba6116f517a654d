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

export function binariesPresent(): boolean {
  return Object.values(binaries()).every((p) => existsSync(p));
}

/**
 * Builds whatever is missing (a no-op when the cache is warm), streaming the script's progress
 * lines to `out`. Failures carry the script's own message (failing command + log tail).
 */
export async function ensureBinaries(out: NodeJS.WritableStream = process.stderr): Promise<void> {
  if (binariesPresent()) return;
  const script = join(repoRoot, 'e2e', 'hack', 'build-control-plane.sh');
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.on('error', reject);
    child.on('exit', (c) => resolve(c ?? 1));
  });
  if (code === 3) throw new UserError('Go is required to build the local control plane; install Go >= 1.26', 3);
  if (code !== 0) throw new UserError(`building the control plane failed (exit ${code}); see the messages above`, 4);
}
