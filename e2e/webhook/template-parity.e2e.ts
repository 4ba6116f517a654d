// e2e: our mutating webhook defaults a pod template exactly as the apiserver defaults the template of
// an apps/v1 DaemonSet. Each template below is sent twice with `kubectl apply --dry-run=server -o json`: as an
// apps/v1 DaemonSet (the apiserver's own defaulting) and as an apps.kruise.io DaemonSet (our webhook); the two
// resulting templates must be equal field by field. Two kubectl calls per side in all (a List each).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNamespace, deleteNamespace, kubectl } from '../lib/kube.ts';

type Json = Record<string, unknown>;

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

/** Pod specs a user may put in a DaemonSet template: together they touch every defaulting rule. */
const TEMPLATES: Record<string, Json> = {
  minimal: { containers: [{ name: 'c', image: 'nginx' }] },
  'image-tags': {
    containers: [
      { name: 'a', image: 'nginx:latest' },
      { name: 'b', image: 'registry.example.com:5000/team/app:v1.2.3' },
      { name: 'c', image: `busybox@${DIGEST}` },
      { name: 'd', image: `busybox:1.36@${DIGEST}` },
      { name: 'e', image: 'localhost/app' },
      { name: 'f', image: 'quay.io/org/img:latest', imagePullPolicy: 'Never' },
    ],
  },
  ports: {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        ports: [
          { containerPort: 80, name: 'http' },
          { containerPort: 53, protocol: 'UDP' },
          { containerPort: 9000, hostPort: 9000 },
        ],
      },
    ],
  },
  'host-network': {
    hostNetwork: true,
    hostPID: true,
    containers: [{ name: 'c', image: 'nginx:1.27', ports: [{ containerPort: 8080 }] }],
  },
  probes: {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        livenessProbe: { httpGet: { port: 80 } },
        readinessProbe: { tcpSocket: { port: 80 }, periodSeconds: 3 },
        startupProbe: { exec: { command: ['true'] }, failureThreshold: 30 },
      },
    ],
  },
  'grpc-probe-and-hooks': {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        livenessProbe: { grpc: { port: 9090 } },
        readinessProbe: { httpGet: { port: 'http', scheme: 'HTTPS', httpHeaders: [{ name: 'X', value: 'y' }] } },
        lifecycle: {
          postStart: { httpGet: { port: 80, path: '/start' } },
          preStop: { sleep: { seconds: 2 } },
        },
        ports: [{ containerPort: 80, name: 'http' }],
      },
    ],
  },
  env: {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        env: [
          { name: 'PLAIN', value: 'x' },
          { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
          { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'requests.memory', divisor: '1Mi' } } },
          { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } },
        ],
        envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'S_', secretRef: { name: 'sec' } }],
      },
    ],
  },
  resources: {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        resources: {
          limits: { cpu: '1.5', memory: '1024Mi', 'ephemeral-storage': '2G' },
          requests: { cpu: 0.25, memory: '512M' },
        },
      },
      { name: 'd', image: 'nginx:1.27', resources: { limits: { cpu: '2000m', memory: '1e9' } } },
      { name: 'e', image: 'nginx:1.27', resources: { requests: { cpu: '0.0001', memory: 1048576 } } },
    ],
  },
  'config-volumes': {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        volumeMounts: [
          { name: 'cm', mountPath: '/cm' },
          { name: 's', mountPath: '/s', readOnly: true },
          { name: 'd', mountPath: '/d' },
          { name: 'p', mountPath: '/p' },
        ],
      },
    ],
    volumes: [
      { name: 'cm', configMap: { name: 'cfg', items: [{ key: 'a', path: 'a' }] } },
      { name: 's', secret: { secretName: 'sec', defaultMode: 0o400 } },
      {
        name: 'd',
        downwardAPI: {
          items: [
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'cpu', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } },
          ],
        },
      },
      {
        name: 'p',
        projected: {
          sources: [
            { serviceAccountToken: { path: 'token' } },
            { configMap: { name: 'cfg' } },
            { secret: { name: 'sec' } },
            { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      },
    ],
  },
  'host-volumes': {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        volumeMounts: [
          { name: 'h', mountPath: '/h' },
          { name: 'e', mountPath: '/e' },
          { name: 'm', mountPath: '/m' },
        ],
      },
    ],
    volumes: [
      { name: 'h', hostPath: { path: '/var/log' } },
      { name: 'h2', hostPath: { path: '/run', type: 'Directory' } },
      { name: 'e', emptyDir: { sizeLimit: '1024Mi' } },
      { name: 'm', emptyDir: { medium: 'Memory' } },
      { name: 'none' },
    ],
  },
  'storage-volumes': {
    containers: [{ name: 'c', image: 'nginx:1.27' }],
    volumes: [
      { name: 'nfs', nfs: { server: 'nfs.example.com', path: '/export' } },
      { name: 'iscsi', iscsi: { targetPortal: '10.0.0.1:3260', iqn: 'iqn.2001-04.com.example:storage', lun: 0 } },
      { name: 'rbd', rbd: { monitors: ['10.0.0.2:6789'], image: 'foo' } },
      { name: 'pvc', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'csi', csi: { driver: 'csi.example.com' } },
    ],
  },
  'ephemeral-volume': {
    containers: [{ name: 'c', image: 'nginx:1.27' }],
    volumes: [
      {
        name: 'scratch',
        ephemeral: {
          volumeClaimTemplate: {
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1.5Gi' } } },
          },
        },
      },
    ],
  },
  'init-and-sidecar': {
    initContainers: [
      { name: 'init', image: 'busybox:1.36', command: ['sh', '-c', 'true'] },
      { name: 'sidecar', image: 'busybox', restartPolicy: 'Always', ports: [{ containerPort: 7000 }] },
    ],
    containers: [{ name: 'c', image: 'nginx:1.27' }],
  },
  'security-and-scheduling': {
    securityContext: { runAsUser: 1000, fsGroup: 2000, seccompProfile: { type: 'RuntimeDefault' } },
    serviceAccountName: 'agent',
    priorityClassName: 'system-node-critical',
    tolerations: [{ operator: 'Exists' }, { key: 'k', value: 'v', effect: 'NoSchedule' }],
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }],
        },
      },
    },
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        securityContext: { privileged: true, capabilities: { add: ['NET_ADMIN'] } },
      },
    ],
  },
  'deprecated-service-account': {
    serviceAccount: 'legacy',
    containers: [{ name: 'c', image: 'nginx:1.27' }],
  },
  'both-service-accounts': {
    serviceAccount: 'legacy',
    serviceAccountName: 'current',
    automountServiceAccountToken: false,
    containers: [{ name: 'c', image: 'nginx:1.27' }],
  },
  'set-pod-fields': {
    dnsPolicy: 'ClusterFirstWithHostNet',
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 5,
    schedulerName: 'my-scheduler',
    enableServiceLinks: false,
    dnsConfig: { nameservers: ['1.1.1.1'], options: [{ name: 'ndots', value: '2' }] },
    hostAliases: [{ ip: '10.0.0.1', hostnames: ['a'] }],
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: 'zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: { a: 'b' } },
      },
    ],
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/tmp/term',
        terminationMessagePolicy: 'FallbackToLogsOnError',
        stdin: true,
        tty: true,
        workingDir: '/w',
      },
    ],
  },
  'overhead-and-pod-resources': {
    containers: [{ name: 'c', image: 'nginx:1.27', resources: { limits: { cpu: '100m', memory: '128Mi' } } }],
    resources: { limits: { cpu: '0.5', memory: '256Mi' } },
  },
  'template-metadata': {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        args: ['--flag'],
        resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }],
      },
    ],
  },
};

function daemonSet(apiVersion: string, name: string, spec: Json, annotations?: Record<string, string>): Json {
  return {
    apiVersion,
    kind: 'DaemonSet',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, ...(annotations ? { annotations } : {}) },
        spec: structuredClone(spec),
      },
    },
  };
}

/** Every path where the two JSON values differ, with both values. */
function diff(a: unknown, b: unknown, path = ''): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => diff(a[k], b[k], `${path}.${k}`));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length)
    return a.flatMap((x, i) => diff(x, b[i], `${path}[${i}]`));
  return [`${path}: apps/v1 ${JSON.stringify(a)} vs ours ${JSON.stringify(b)}`];
}

interface ListJson {
  items: { metadata: { name: string }; spec: { template: Json } }[];
}

async function dryRunTemplates(ns: string, objects: Json[]): Promise<Map<string, Json>> {
  const out = await kubectl(
    ['apply', '-n', ns, '--dry-run=server', '-o', 'json', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
  );
  const parsed = JSON.parse(out) as ListJson | ListJson['items'][number];
  const items = 'items' in parsed ? parsed.items : [parsed];
  return new Map(items.map((i) => [i.metadata.name, i.spec.template]));
}

describe('pod template defaulting parity with apps/v1', { timeout: 120_000 }, () => {
  let ns: string;
  before(async () => {
    ns = await createNamespace('e2e-parity');
  });
  after(async () => {
    await deleteNamespace(ns);
  });

  test(`${Object.keys(TEMPLATES).length} templates defaulted identically (kubectl apply --dry-run=server)`, async () => {
    assert.ok(Object.keys(TEMPLATES).length >= 15, 'at least 15 templates');
    const names = Object.keys(TEMPLATES);
    const annotations = { 'example.com/note': 'kept' };
    const [native, ours] = await Promise.all([
      dryRunTemplates(
        ns,
        names.map((n) => daemonSet('apps/v1', n, TEMPLATES[n]!, annotations)),
      ),
      dryRunTemplates(
        ns,
        names.map((n) => daemonSet('apps.kruise.io/v1alpha1', n, TEMPLATES[n]!, annotations)),
      ),
    ]);
    const differences = names.flatMap((n) => {
      const a = native.get(n);
      const b = ours.get(n);
      assert.ok(a && b, `both dry runs returned ${n}`);
      return diff(a, b).map((d) => `${n}: template${d}`);
    });
    assert.deepEqual(differences, [], `templates differ:\n${differences.join('\n')}`);
    // Not vacuous: the apiserver really defaulted something in each template.
    for (const n of names) {
      const spec = ours.get(n)?.spec as Json;
      assert.equal(spec.schedulerName !== undefined, true, `${n}: defaulted (schedulerName present)`);
    }
  });
});
