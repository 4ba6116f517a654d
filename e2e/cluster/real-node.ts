// Real nodes of the local cluster (`cluster up --real-nodes N`): each a kubelet with its own containerd 2, runc from
// Debian and a CNI bridge, beside the kwok nodes. Everything one node makes carries the cluster's id, so that
// `cluster down` can remove exactly that: its processes and containers, mounts, network namespaces, bridge, iptables
// rules, cgroups, the kernel settings the kubelet changed, and its directories. leftovers() lists what remains, for
// `cluster down` to report and the e2e test to assert empty.
//
// Layout of node i of a cluster whose id is ID (a hash of its directory):
//   <cluster dir>/nodes/real-node-<i>/   kubelet root, containerd root, CNI config and IPAM, pod logs, configs
//   /run/ads-ID/<i>/                     sockets and containerd's state (short paths: a socket path has 108 bytes)
//   bridge adsID-<i>, 10.89.X.0/24       the pods' network; the node's IP is the bridge's, 10.89.X.1
//   cgroup /ads-ID-<i> in each hierarchy the kubelet's cgroupRoot (its kubepods tree is under it)
// The node shares the host's network namespace; its pods reach the apiserver (bound to 127.0.0.1) at the
// `kubernetes` Service address through one DNAT rule, with route_localnet on the bridge, as kube-proxy does for
// localhost node ports. No kube-proxy: the apiserver reaches webhook Services by their endpoints
// (--enable-aggregator-routing), and nothing else here needs Service addresses.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { UserError } from '../../src/cli/command.ts';
import { createLeaf, loadCA } from '../../src/pki/pki.ts';
import { sleep } from '../../src/testing/wait.ts';
import { nodeBinaries } from './binaries.ts';

const run = promisify(execFile);

/** The `kubernetes` Service's address: the first of --service-cluster-ip-range (cluster.ts). */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
/** Label every real node registers with, so tests and users can select them. */
export const REAL_NODE_LABEL = 'advanced-daemonset.io/real-node';
/**
 * The taint put on the kwok nodes of a cluster with real nodes: the scheduler then puts what must really run (the
 * chart's Deployment, any pod) on a real node, and a DaemonSet reaches the fake nodes only with a toleration.
 */
export const FAKE_NODE_TAINT = { key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' } as const;
const PODS_SUBNETS = '10.89';
/**
 * Directories outside the node's own that its components create whatever their configuration: the shims' sockets
 * (/run/containerd/s, pkg/shim/util_unix.go, SocketAddress, in containerd) and libcni's result cache
 * (/var/lib/cni/results); deepest first.
 */
const HOST_DIRS = ['/run/containerd/s', '/run/containerd', '/var/lib/cni/results', '/var/lib/cni'];

/**
 * Kernel settings the kubelet sets at start (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables, with
 * protectKernelDefaults false): recorded before the first node starts and restored by `cluster down`.
 */
const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
];

export interface RealNodeRecord {
  name: string;
  /** Directory of its files under the cluster directory. */
  dir: string;
  /** Sockets and containerd's state. */
  runDir: string;
  bridge: string;
  subnet: string;
  ip: string;
  cgroupRoot: string;
  cniNetwork: string;
  /** Marks this node's iptables rules (a comment match). */
  ruleComment: string;
  containerdSocket: string;
  kubeletPort: number;
  /** The kernel settings before the kubelet changed them (only on the first node). */
  sysctls?: Record<string, string>;
  /** Which of HOST_DIRS did not exist before this node (`down` removes those once empty). */
  madeHostDirs?: string[];
}

export const clusterId = (dir: string) => createHash('sha256').update(dir).digest('hex').slice(0, 6);

async function sh(cmd: string, args: string[], opts: { timeoutMs?: number } = {}): Promise<string> {
  try {
    return (await run(cmd, args, { maxBuffer: 64 * 1024 * 1024, timeout: opts.timeoutMs ?? 60_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new UserError(`${cmd} ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

/**
 * Why a real node cannot run here, or undefined when it can: Linux, root, cgroup v1 or v2 mounted, and the Debian
 * packages of e2e/hack/install-node-packages.sh and the binaries of e2e/hack/build-node.sh in place.
 */
export function realNodeUnsupported(opts: { binaries?: boolean } = {}): string | undefined {
  if (process.platform !== 'linux') return `real nodes need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'real nodes need root (the kubelet and containerd run as root)';
  const missing = [
    ['/usr/sbin/runc', 'runc'],
    ['/usr/lib/cni/bridge', 'containernetworking-plugins'],
    ['/usr/sbin/iptables', 'iptables'],
    ['/usr/bin/docker-registry', 'docker-registry'],
  ].filter(([path]) => !existsSync(path!));
  if (missing.length > 0)
    return `Debian packages missing: ${missing.map(([, p]) => p).join(', ')} (run e2e/hack/install-node-packages.sh)`;
  const absent = Object.entries(opts.binaries === false ? {} : nodeBinaries()).filter(([, p]) => !existsSync(p));
  if (absent.length > 0) return `binaries missing: ${absent.map(([n]) => n).join(', ')} (run e2e/hack/build-node.sh)`;
  if (!existsSync('/sys/fs/cgroup')) return 'no cgroup filesystem at /sys/fs/cgroup';
  return undefined;
}

/** cgroup v1 hierarchies (one folder per controller set), or [''] on the unified v2 hierarchy. */
function cgroupHierarchies(): string[] {
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return ['/sys/fs/cgroup'];
  return readdirSync('/sys/fs/cgroup')
    .map((d) => join('/sys/fs/cgroup', d))
    .filter((d) => {
      try {
        return statSync(d).isDirectory() && existsSync(join(d, 'cgroup.procs'));
      } catch {
        return false;
      }
    });
}

/** Picks 10.89.X.0/24 with no address or route of this host inside it. */
async function freeSubnet(taken: Set<string>): Promise<string> {
  const used = (await sh('ip', ['-4', '-o', 'addr'])) + (await sh('ip', ['-4', 'route']));
  for (let x = 0; x < 256; x++) {
    const prefix = `${PODS_SUBNETS}.${x}.`;
    if (!used.includes(prefix) && !taken.has(prefix)) return `${PODS_SUBNETS}.${x}.0/24`;
  }
  throw new UserError(`no free /24 left in ${PODS_SUBNETS}.0.0/16 for a real node's pods`);
}

export interface RealNodePlan {
  clusterDir: string;
  index: number;
  /** The cluster's PKI directory (ca.crt, ca.key) and apiserver URL (https://127.0.0.1:PORT). */
  pkiDir: string;
  server: string;
  registry: string;
  sandboxImage: string;
  taken: Set<string>;
  kubeletPort: number;
  kubeletHealthzPort: number;
}

export interface RealNodeFiles {
  record: RealNodeRecord;
  containerdConfig: string;
  kubeletConfig: string;
  kubeconfig: string;
}

/** Makes the node's network, cgroups and files; returns what to start (cluster.ts starts the two processes). */
export async function prepareRealNode(p: RealNodePlan): Promise<RealNodeFiles> {
  const id = clusterId(p.clusterDir);
  const name = `real-node-${p.index}`;
  const dir = join(p.clusterDir, 'nodes', name);
  const runDir = `/run/ads-${id}/${p.index}`;
  const subnet = await freeSubnet(p.taken);
  p.taken.add(subnet.replace(/0\/24$/, ''));
  const ip = subnet.replace(/0\/24$/, '1');
  const record: RealNodeRecord = {
    name,
    dir,
    runDir,
    bridge: `ads${id}-${p.index}`,
    subnet,
    ip,
    cgroupRoot: `/ads-${id}-${p.index}`,
    cniNetwork: `ads-${id}-${p.index}`,
    ruleComment: `advanced-daemonset ${id} ${name}`,
    containerdSocket: join(runDir, 'containerd.sock'),
    kubeletPort: p.kubeletPort,
  };
  for (const d of ['cni/net.d', 'cni/ipam', 'certs.d', 'kubelet', 'pod-logs', 'containerd']) {
    mkdirSync(join(dir, d), { recursive: true });
  }
  mkdirSync(runDir, { recursive: true });

  // The bridge exists before the kubelet, whose --node-ip must be an address of this host; the CNI bridge plugin
  // takes it over as it is (same name, same gateway address).
  await sh('ip', ['link', 'add', record.bridge, 'type', 'bridge']);
  await sh('ip', ['addr', 'add', `${ip}/24`, 'dev', record.bridge]);
  await sh('ip', ['link', 'set', record.bridge, 'up']);
  writeFileSync(`/proc/sys/net/ipv4/conf/${record.bridge}/route_localnet`, '1');
  const apiPort = new URL(p.server).port;
  await sh('iptables', [
    ...['-t', 'nat', '-A', 'PREROUTING', '-i', record.bridge, '-d', KUBERNETES_SERVICE_IP, '-p', 'tcp'],
    ...['--dport', '443', '-m', 'comment', '--comment', record.ruleComment],
    ...['-j', 'DNAT', '--to-destination', `127.0.0.1:${apiPort}`],
  ]);

  // The kubelet refuses a cgroupRoot that does not exist; cpuset needs its cpus and mems filled in (cgroup v1).
  for (const h of cgroupHierarchies()) {
    const d = join(h, record.cgroupRoot);
    mkdirSync(d, { recursive: true });
    for (const f of ['cpuset.cpus', 'cpuset.mems']) {
      if (existsSync(join(d, f)) && readFileSync(join(d, f), 'utf8').trim() === '')
        writeFileSync(join(d, f), readFileSync(join(h, f), 'utf8'));
    }
  }
  record.madeHostDirs = HOST_DIRS.filter((d) => !existsSync(d));
  if (p.index === 0) {
    record.sysctls = Object.fromEntries(
      KUBELET_SYSCTLS.map((k) => [k, readFileSync(`/proc/sys/${k}`, 'utf8').trim()] as const),
    );
  }

  const cni = {
    cniVersion: '1.0.0',
    name: record.cniNetwork,
    plugins: [
      {
        type: 'bridge',
        bridge: record.bridge,
        isGateway: true,
        // No masquerading: pods talk to this host only, and masquerading would add rules outside our comment.
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet, gateway: ip }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(dir, 'cni', 'ipam'),
        },
      },
    ],
  };
  writeFileSync(join(dir, 'cni', 'net.d', '10-ads.conflist'), JSON.stringify(cni, null, 2));
  // The registry speaks plain HTTP on loopback (containerd's hosts.toml:
  // https://github.com/containerd/containerd/blob/main/docs/hosts.md).
  mkdirSync(join(dir, 'certs.d', p.registry), { recursive: true });
  writeFileSync(
    join(dir, 'certs.d', p.registry, 'hosts.toml'),
    `server = "http://${p.registry}"\n\n[host."http://${p.registry}"]\n  capabilities = ["pull", "resolve", "push"]\n`,
  );

  const containerdConfig = join(dir, 'containerd.toml');
  writeFileSync(containerdConfig, containerdToml(record, p, dir));

  const pki = (f: string) => readFileSync(join(p.pkiDir, f), 'utf8');
  const ca = await loadCA(pki('ca.crt'), pki('ca.key'));
  // The Node authorizer and NodeRestriction know a kubelet by this name and group.
  const client = await createLeaf(ca, {
    commonName: `system:node:${name}`,
    organizations: ['system:nodes'],
    usage: 'client',
  });
  const serving = await createLeaf(ca, { commonName: name, usage: 'server', ipAddresses: [ip], dnsNames: [name] });
  const f = (n: string) => join(dir, n);
  writeFileSync(f('kubelet-client.crt'), client.certPem);
  writeFileSync(f('kubelet-client.key'), client.keyPem, { mode: 0o600 });
  writeFileSync(f('kubelet-serving.crt'), serving.certPem);
  writeFileSync(f('kubelet-serving.key'), serving.keyPem, { mode: 0o600 });
  const kubeconfig = f('kubelet.kubeconfig');
  writeFileSync(
    kubeconfig,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server: p.server, 'certificate-authority': join(p.pkiDir, 'ca.crt') } }],
      users: [
        {
          name: 'kubelet',
          user: { 'client-certificate': f('kubelet-client.crt'), 'client-key': f('kubelet-client.key') },
        },
      ],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'kubelet' } }],
      'current-context': 'local',
    }),
    { mode: 0o600 },
  );
  const kubeletConfig = f('kubelet.yaml');
  writeFileSync(kubeletConfig, toYaml(kubeletConfiguration(record, p, dir)));
  return { record, containerdConfig, kubeletConfig, kubeconfig };
}

/**
 * Whether this process may lower an OOM score below its own (CAP_SYS_RESOURCE, bit 24 of CapEff). Some VMs run root
 * without it; then runc cannot give a pod sandbox containerd's -998 ("failed to update /proc/self/oom_score_adj:
 * Permission denied"), and containerd must keep every score at or above its own (restrict_oom_score_adj, as for
 * rootless containerd).
 */
function canLowerOomScore(): boolean {
  const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  return eff !== undefined && (BigInt(`0x${eff}`) & (1n << 24n)) !== 0n;
}

/** containerd 2's config (version 4): https://github.com/containerd/containerd/blob/main/docs/cri/config.md */
function containerdToml(r: RealNodeRecord, p: RealNodePlan, dir: string): string {
  const q = JSON.stringify;
  return `version = 4
imports = []
root = ${q(join(dir, 'containerd'))}
state = ${q(join(r.runDir, 'containerd'))}
# Plugins that would use paths outside this node's directories (/opt/containerd, /var/run/nri) and are not needed.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp"]

[plugins."io.containerd.server.v1.grpc"]
  address = ${q(r.containerdSocket)}

[plugins."io.containerd.server.v1.ttrpc"]
  address = ${q(`${r.containerdSocket}.ttrpc`)}

[debug]
  level = "warn"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${q(p.sandboxImage)}
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = ${q(join(dir, 'certs.d'))}

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  disable_apparmor = true
  # Pod network namespaces as files under the state directory, not /var/run/netns.
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = ${!canLowerOomScore()}
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = ${q(join(r.runDir, 'runc'))}
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = ${q(join(dir, 'cni', 'net.d'))}
    max_conf_num = 1
`;
}

/** https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/ */
function kubeletConfiguration(r: RealNodeRecord, p: RealNodePlan, dir: string) {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: r.ip,
    port: p.kubeletPort,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: p.kubeletHealthzPort,
    tlsCertFile: join(dir, 'kubelet-serving.crt'),
    tlsPrivateKeyFile: join(dir, 'kubelet-serving.key'),
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: join(p.pkiDir, 'ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${r.containerdSocket}`,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: r.cgroupRoot,
    // Kubernetes 1.35+ refuses cgroup v1 unless told (https://github.com/kubernetes/enhancements/issues/5573); this
    // machine mounts v1.
    failCgroupV1: false,
    failSwapOn: false,
    podLogsDir: join(dir, 'pod-logs'),
    resolvConf: '/etc/resolv.conf',
    serializeImagePulls: false,
    // A shared development machine's disk may be nearly full; evict only when it really is.
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    nodeStatusUpdateFrequency: '10s',
    shutdownGracePeriod: '0s',
  };
}

/** The kubelet's command line. */
export function kubeletArgs(files: RealNodeFiles): string[] {
  const r = files.record;
  return [
    `--config=${files.kubeletConfig}`,
    `--kubeconfig=${files.kubeconfig}`,
    `--root-dir=${join(r.dir, 'kubelet')}`,
    `--cert-dir=${join(r.dir, 'kubelet', 'pki')}`,
    `--hostname-override=${r.name}`,
    `--node-ip=${r.ip}`,
    `--node-labels=${REAL_NODE_LABEL}=true`,
    '--v=1',
  ];
}

/** crictl on this node's containerd. */
function crictl(r: RealNodeRecord, args: string[], timeoutMs = 120_000): Promise<string> {
  return sh(
    nodeBinaries().crictl,
    ['--runtime-endpoint', `unix://${r.containerdSocket}`, '--timeout', '60s', ...args],
    {
      timeoutMs,
    },
  );
}

/** True once containerd answers CRI on its socket. */
export async function containerdReady(r: RealNodeRecord): Promise<boolean> {
  if (!existsSync(r.containerdSocket)) return false;
  return crictl(r, ['info'], 10_000).then(
    () => true,
    () => false,
  );
}

/**
 * Removes every pod sandbox of the node through CRI (its containers stop, its network is torn down by the CNI
 * plugins, its IP released): what the kubelet would do, while containerd still runs. Errors are reported, not
 * thrown: what remains is removed by force afterwards.
 */
export async function removePodSandboxes(r: RealNodeRecord, progress: (l: string) => void): Promise<void> {
  if (!(await containerdReady(r))) return;
  const ids = await podIds(r).catch(() => []);
  if (ids.length > 0) await crictl(r, ['stopp', ...ids]).catch((e: Error) => progress(`  ${e.message}`));
  await crictl(r, ['rmp', '--force', '--all']).catch((e: Error) => progress(`  ${e.message}`));
}

async function podIds(r: RealNodeRecord): Promise<string[]> {
  return (await crictl(r, ['pods', '-q'])).split('\n').filter(Boolean);
}

/** Processes whose command line or cgroup names this node (containerd's shims, containers the shims left). */
function nodeProcesses(r: RealNodeRecord): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      if (cmdline.includes(r.runDir) || cmdline.includes(r.dir) || cgroup.includes(`${r.cgroupRoot}/`)) {
        pids.push(Number(entry));
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/** Mount points at or under the node's directories, deepest first (/proc/self/mountinfo's fifth field). */
function nodeMounts(r: RealNodeRecord): string[] {
  const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => unescape(l.split(' ')[4] ?? ''))
    .filter((m) => [r.dir, r.runDir].some((d) => m === d || m.startsWith(`${d}/`)))
    .sort((a, b) => b.length - a.length);
}

/** `iptables -t nat -S` lines of this node: its DNAT rule, and any a CNI plugin marked with its network's name. */
async function nodeRules(r: RealNodeRecord): Promise<string[]> {
  const rules = await sh('iptables', ['-t', 'nat', '-S']).catch(() => '');
  return rules.split('\n').filter((l) => l.includes(r.ruleComment) || l.includes(r.cniNetwork));
}

function nodeCgroups(r: RealNodeRecord): string[] {
  return cgroupHierarchies()
    .map((h) => join(h, r.cgroupRoot))
    .filter((d) => existsSync(d));
}

/** libcni's result cache (/var/lib/cni/results, containerd does not move it) entries of this node's network. */
function cniCacheFiles(r: RealNodeRecord): string[] {
  const d = '/var/lib/cni/results';
  if (!existsSync(d)) return [];
  return readdirSync(d)
    .filter((f) => f.startsWith(`${r.cniNetwork}-`))
    .map((f) => join(d, f));
}

async function linkExists(name: string): Promise<boolean> {
  return sh('ip', ['link', 'show', name]).then(
    () => true,
    () => false,
  );
}

/** What a real node left on this host; empty after a clean `cluster down`. */
export async function leftovers(r: RealNodeRecord): Promise<string[]> {
  const out: string[] = [];
  for (const pid of nodeProcesses(r))
    out.push(`process ${pid}: ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()}`);
  for (const m of nodeMounts(r)) out.push(`mount ${m}`);
  if (await linkExists(r.bridge)) out.push(`network link ${r.bridge}`);
  for (const rule of await nodeRules(r)) out.push(`iptables nat rule: ${rule}`);
  for (const c of nodeCgroups(r)) out.push(`cgroup ${c}`);
  for (const f of cniCacheFiles(r)) out.push(`CNI cache ${f}`);
  for (const d of [r.dir, r.runDir, ...(r.madeHostDirs ?? [])]) if (existsSync(d)) out.push(`directory ${d}`);
  for (const [k, v] of Object.entries(r.sysctls ?? {})) {
    const now = readFileSync(`/proc/sys/${k}`, 'utf8').trim();
    if (now !== v) out.push(`sysctl ${k.replace(/\//g, '.')} = ${now} (was ${v})`);
  }
  return out;
}

/** Removes by force whatever the node's processes left (after removePodSandboxes and with them stopped). */
export async function cleanUpRealNode(r: RealNodeRecord, progress: (l: string) => void): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pids = nodeProcesses(r);
    if (pids.length === 0) break;
    if (attempt === 0) progress(`  killing ${pids.length} leftover processes of ${r.name}`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(100);
  }
  for (const m of nodeMounts(r)) await sh('umount', ['-l', m]).catch((e: Error) => progress(`  ${e.message}`));
  for (const rule of await nodeRules(r)) {
    const args = rule
      .replace(/^-A /, '-D ')
      .match(/"[^"]*"|\S+/g)!
      .map((a) => a.replace(/^"(.*)"$/, '$1'));
    await sh('iptables', ['-t', 'nat', ...args]).catch((e: Error) => progress(`  ${e.message}`));
  }
  // Chains a CNI plugin created for the network (none with ipMasq off), emptied above, then deleted.
  const chains = (await sh('iptables', ['-t', 'nat', '-S']).catch(() => ''))
    .split('\n')
    .filter((l) => l.startsWith('-N ') && l.includes(r.cniNetwork));
  for (const c of chains) await sh('iptables', ['-t', 'nat', '-X', c.slice(3)]).catch(() => undefined);
  if (await linkExists(r.bridge))
    await sh('ip', ['link', 'del', r.bridge]).catch((e: Error) => progress(`  ${e.message}`));
  // Deepest cgroups first: a cgroup with children cannot be removed.
  for (const root of nodeCgroups(r)) removeCgroupTree(root);
  for (const f of cniCacheFiles(r)) rmSync(f, { force: true });
  for (const [k, v] of Object.entries(r.sysctls ?? {})) {
    try {
      writeFileSync(`/proc/sys/${k}`, v);
    } catch (e) {
      progress(`  could not restore ${k}: ${(e as Error).message}`);
    }
  }
  for (const d of r.madeHostDirs ?? []) {
    try {
      rmdirSync(d);
    } catch {
      /* absent, or another node's files are in it */
    }
  }
  rmSync(r.runDir, { recursive: true, force: true });
  try {
    rmdirSync(join(r.runDir, '..'));
  } catch {
    /* another node's directory is still there */
  }
  rmSync(r.dir, { recursive: true, force: true });
}

function removeCgroupTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeCgroupTree(join(dir, entry.name));
  }
  try {
    rmdirSync(dir);
  } catch {
    /* reported by leftovers() */
  }
}
