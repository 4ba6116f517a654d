// Objects as the apiserver returns them (kube-apiserver v1.36 on this repository's local cluster, pods with the kubelet's
// status fields added), around the lean fixtures of test-fixtures.ts: managedFields, volumes, env, probes,
// resources, tolerations, status details, node images and nodeInfo. fullPod/fullNode keep every field the fixture
// sets and add the rest, so a snapshot can be planned as the informers would hold it untrimmed
// (cache-shapes.test.ts). Used by *.test.ts only.
import type { Node, NodeCondition, Pod, PodSpec } from '../k8s/types.ts';
import { cloneJson } from '../k8s/json.ts';

const POD_MANAGED_FIELDS = [
  {
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/default-container': {}, 'f:prometheus.io/scrape': {} },
        'f:generateName': {},
        'f:labels': { '.': {}, 'f:app': {}, 'f:controller-revision-hash': {}, 'f:pod-template-generation': {} },
        'f:ownerReferences': { '.': {}, 'k:{"uid":"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"}': {} },
      },
      'f:spec': {
        'f:affinity': {
          '.': {},
          'f:nodeAffinity': { '.': {}, 'f:requiredDuringSchedulingIgnoredDuringExecution': {} },
        },
        'f:containers': {
          'k:{"name":"agent"}': {
            '.': {},
            'f:args': {},
            'f:env': {
              '.': {},
              'k:{"name":"GOMAXPROCS"}': { '.': {}, 'f:name': {}, 'f:value': {} },
              'k:{"name":"NODE_NAME"}': { '.': {}, 'f:name': {}, 'f:valueFrom': { '.': {}, 'f:fieldRef': {} } },
              'k:{"name":"POD_IP"}': { '.': {}, 'f:name': {}, 'f:valueFrom': { '.': {}, 'f:fieldRef': {} } },
            },
            'f:image': {},
            'f:imagePullPolicy': {},
            'f:livenessProbe': {
              '.': {},
              'f:failureThreshold': {},
              'f:httpGet': { '.': {}, 'f:path': {}, 'f:port': {}, 'f:scheme': {} },
              'f:initialDelaySeconds': {},
              'f:periodSeconds': {},
              'f:successThreshold': {},
              'f:timeoutSeconds': {},
            },
            'f:name': {},
            'f:ports': {
              '.': {},
              'k:{"containerPort":9100,"protocol":"TCP"}': {
                '.': {},
                'f:containerPort': {},
                'f:name': {},
                'f:protocol': {},
              },
            },
            'f:readinessProbe': {
              '.': {},
              'f:failureThreshold': {},
              'f:httpGet': { '.': {}, 'f:path': {}, 'f:port': {}, 'f:scheme': {} },
              'f:periodSeconds': {},
              'f:successThreshold': {},
              'f:timeoutSeconds': {},
            },
            'f:resources': {
              '.': {},
              'f:limits': { '.': {}, 'f:memory': {} },
              'f:requests': { '.': {}, 'f:cpu': {}, 'f:memory': {} },
            },
            'f:securityContext': {
              '.': {},
              'f:capabilities': { '.': {}, 'f:add': {} },
              'f:privileged': {},
              'f:readOnlyRootFilesystem': {},
            },
            'f:terminationMessagePath': {},
            'f:terminationMessagePolicy': {},
            'f:volumeMounts': {
              '.': {},
              'k:{"mountPath":"/etc/node-agent"}': { '.': {}, 'f:mountPath': {}, 'f:name': {}, 'f:readOnly': {} },
              'k:{"mountPath":"/host/proc"}': { '.': {}, 'f:mountPath': {}, 'f:name': {}, 'f:readOnly': {} },
              'k:{"mountPath":"/host/sys"}': { '.': {}, 'f:mountPath': {}, 'f:name': {}, 'f:readOnly': {} },
              'k:{"mountPath":"/var/log"}': { '.': {}, 'f:mountPath': {}, 'f:name': {}, 'f:readOnly': {} },
            },
          },
          'k:{"name":"log-shipper"}': {
            '.': {},
            'f:image': {},
            'f:imagePullPolicy': {},
            'f:name': {},
            'f:resources': { '.': {}, 'f:requests': { '.': {}, 'f:cpu': {}, 'f:memory': {} } },
            'f:terminationMessagePath': {},
            'f:terminationMessagePolicy': {},
            'f:volumeMounts': {
              '.': {},
              'k:{"mountPath":"/var/log"}': { '.': {}, 'f:mountPath': {}, 'f:name': {}, 'f:readOnly': {} },
            },
          },
        },
        'f:dnsPolicy': {},
        'f:enableServiceLinks': {},
        'f:priorityClassName': {},
        'f:readinessGates': {},
        'f:restartPolicy': {},
        'f:schedulerName': {},
        'f:securityContext': {},
        'f:terminationGracePeriodSeconds': {},
        'f:tolerations': {},
        'f:volumes': {
          '.': {},
          'k:{"name":"config"}': {
            '.': {},
            'f:configMap': { '.': {}, 'f:defaultMode': {}, 'f:name': {} },
            'f:name': {},
          },
          'k:{"name":"host-proc"}': { '.': {}, 'f:hostPath': { '.': {}, 'f:path': {}, 'f:type': {} }, 'f:name': {} },
          'k:{"name":"host-sys"}': { '.': {}, 'f:hostPath': { '.': {}, 'f:path': {}, 'f:type': {} }, 'f:name': {} },
          'k:{"name":"varlog"}': { '.': {}, 'f:hostPath': { '.': {}, 'f:path': {}, 'f:type': {} }, 'f:name': {} },
        },
      },
    },
    manager: 'kubectl-create',
    operation: 'Update',
    time: '2026-11-24T01:14:41Z',
  },
  {
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:status': {
        'f:conditions': {
          'k:{"type":"ContainersReady"}': {
            '.': {},
            'f:lastProbeTime': {},
            'f:lastTransitionTime': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"Initialized"}': {
            '.': {},
            'f:lastProbeTime': {},
            'f:lastTransitionTime': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"Ready"}': {
            '.': {},
            'f:lastProbeTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
        },
        'f:containerStatuses': {},
        'f:phase': {},
        'f:podIP': {},
        'f:podIPs': { '.': {}, 'k:{"ip":"10.244.0.1"}': { '.': {}, 'f:ip': {} } },
        'f:startTime': {},
      },
    },
    manager: 'kwok',
    operation: 'Update',
    subresource: 'status',
    time: '2026-11-24T01:14:41Z',
  },
];

const POD_ANNOTATIONS = { 'kubectl.kubernetes.io/default-container': 'agent', 'prometheus.io/scrape': 'true' };

/** Everything of a daemon pod's spec the fixtures do not set (as the apiserver defaulted it). */
const POD_SPEC: Omit<PodSpec, 'containers'> = {
  dnsPolicy: 'ClusterFirst',
  enableServiceLinks: true,
  preemptionPolicy: 'PreemptLowerPriority',
  priority: 2000001000,
  priorityClassName: 'system-node-critical',
  restartPolicy: 'Always',
  schedulerName: 'default-scheduler',
  securityContext: {},
  serviceAccount: 'default',
  serviceAccountName: 'default',
  terminationGracePeriodSeconds: 30,
  tolerations: [
    { effect: 'NoSchedule', operator: 'Exists' },
    { effect: 'NoExecute', key: 'node.kubernetes.io/not-ready', operator: 'Exists' },
    { effect: 'NoExecute', key: 'node.kubernetes.io/unreachable', operator: 'Exists' },
    { effect: 'NoSchedule', key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' },
    { effect: 'NoSchedule', key: 'node.kubernetes.io/memory-pressure', operator: 'Exists' },
    { effect: 'NoSchedule', key: 'node.kubernetes.io/pid-pressure', operator: 'Exists' },
    { effect: 'NoSchedule', key: 'node.kubernetes.io/unschedulable', operator: 'Exists' },
  ],
  volumes: [
    { configMap: { defaultMode: 420, name: 'node-agent-config' }, name: 'config' },
    { hostPath: { path: '/proc', type: 'Directory' }, name: 'host-proc' },
    { hostPath: { path: '/sys', type: '' }, name: 'host-sys' },
    { hostPath: { path: '/var/log', type: '' }, name: 'varlog' },
    {
      name: 'kube-api-access-8ds4q',
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { items: [{ key: 'ca.crt', path: 'ca.crt' }], name: 'kube-root-ca.crt' } },
          {
            downwardAPI: {
              items: [{ fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' }, path: 'namespace' }],
            },
          },
        ],
      },
    },
  ],
};

/** Per container (by position; the last for any further ones): what the fixtures leave out. */
const CONTAINER_EXTRAS = [
  {
    args: ['--config=/etc/node-agent/config.yaml', '--v=2', '--metrics-bind-address=:9100'],
    env: [
      { name: 'NODE_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
      { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
      { name: 'GOMAXPROCS', value: '2' },
    ],
    imagePullPolicy: 'IfNotPresent',
    livenessProbe: {
      failureThreshold: 3,
      httpGet: { path: '/healthz', port: 9100, scheme: 'HTTP' },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      successThreshold: 1,
      timeoutSeconds: 1,
    },
    ports: [{ containerPort: 9100, name: 'metrics', protocol: 'TCP' }],
    readinessProbe: {
      failureThreshold: 3,
      httpGet: { path: '/readyz', port: 9100, scheme: 'HTTP' },
      periodSeconds: 5,
      successThreshold: 1,
      timeoutSeconds: 1,
    },
    resources: { limits: { memory: '128Mi' }, requests: { cpu: '50m', memory: '64Mi' } },
    securityContext: { capabilities: { add: ['SYS_PTRACE'] }, privileged: false, readOnlyRootFilesystem: true },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    volumeMounts: [
      { mountPath: '/etc/node-agent', name: 'config', readOnly: true },
      { mountPath: '/host/proc', name: 'host-proc', readOnly: true },
      { mountPath: '/host/sys', name: 'host-sys', readOnly: true },
      { mountPath: '/var/log', name: 'varlog', readOnly: true },
      { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', name: 'kube-api-access-8ds4q', readOnly: true },
    ],
  },
  {
    imagePullPolicy: 'IfNotPresent',
    resources: { requests: { cpu: '10m', memory: '32Mi' } },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    volumeMounts: [
      { mountPath: '/var/log', name: 'varlog', readOnly: true },
      { mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', name: 'kube-api-access-8ds4q', readOnly: true },
    ],
  },
];

const POD_STATUS = {
  hostIP: '172.18.0.5',
  hostIPs: [{ ip: '172.18.0.5' }],
  podIP: '10.244.0.1',
  podIPs: [{ ip: '10.244.0.1' }],
  qosClass: 'Burstable',
  startTime: '2026-11-24T01:14:41Z',
};

const NODE_MANAGED_FIELDS = [
  {
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:labels': { 'f:beta.kubernetes.io/arch': {}, 'f:beta.kubernetes.io/os': {} } } },
    manager: 'kube-controller-manager',
    operation: 'Update',
    time: '2026-11-24T01:09:04Z',
  },
  {
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:annotations': { '.': {}, 'f:kwok.x-k8s.io/node': {}, 'f:node.alpha.kubernetes.io/ttl': {} },
        'f:labels': {
          '.': {},
          'f:kubernetes.io/arch': {},
          'f:kubernetes.io/hostname': {},
          'f:kubernetes.io/os': {},
          'f:type': {},
        },
      },
    },
    manager: 'kubectl-create',
    operation: 'Update',
    time: '2026-11-24T01:09:04Z',
  },
  {
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:status': {
        'f:allocatable': { '.': {}, 'f:cpu': {}, 'f:memory': {}, 'f:pods': {} },
        'f:capacity': { '.': {}, 'f:cpu': {}, 'f:memory': {}, 'f:pods': {} },
        'f:conditions': {
          '.': {},
          'k:{"type":"DiskPressure"}': {
            '.': {},
            'f:lastHeartbeatTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"MemoryPressure"}': {
            '.': {},
            'f:lastHeartbeatTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"NetworkUnavailable"}': {
            '.': {},
            'f:lastHeartbeatTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"PIDPressure"}': {
            '.': {},
            'f:lastHeartbeatTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
          'k:{"type":"Ready"}': {
            '.': {},
            'f:lastHeartbeatTime': {},
            'f:lastTransitionTime': {},
            'f:message': {},
            'f:reason': {},
            'f:status': {},
            'f:type': {},
          },
        },
        'f:nodeInfo': {
          'f:architecture': {},
          'f:containerRuntimeVersion': {},
          'f:kernelVersion': {},
          'f:kubeProxyVersion': {},
          'f:kubeletVersion': {},
          'f:operatingSystem': {},
        },
        'f:phase': {},
      },
    },
    manager: 'kwok',
    operation: 'Update',
    subresource: 'status',
    time: '2026-11-24T01:14:46Z',
  },
];

/** Conditions the kubelet reports besides those a fixture sets (their types are not read by the planner). */
const POD_CONDITIONS = [
  {
    type: 'PodReadyToStartContainers',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: '2026-11-24T01:14:43Z',
  },
  { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:14:41Z' },
  { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:14:44Z' },
  { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:14:41Z' },
];

/** What a kubelet (v1.33+) adds to each container status. */
function containerStatusExtras(i: number) {
  return {
    containerID: `containerd://${String(i).padStart(2, '0')}9f3c1e0b7a6d5c4b3a29180f7e6d5c4b3a291807f6e5d4c3b2a1908f7e6d5c4b`,
    allocatedResources: { cpu: '50m', memory: '64Mi' },
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '128Mi' } },
    user: { linux: { uid: 0, gid: 0, supplementalGroups: [0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27] } },
    volumeMounts: [
      { name: 'config', mountPath: '/etc/node-agent', readOnly: true, recursiveReadOnly: 'Disabled' },
      { name: 'varlog', mountPath: '/var/log', readOnly: true, recursiveReadOnly: 'Disabled' },
      {
        name: 'kube-api-access-8ds4q',
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        readOnly: true,
        recursiveReadOnly: 'Disabled',
      },
    ],
  };
}

/**
 * `pod` as the apiserver would return it: the fixture's fields win, everything else is added. Conditions the
 * fixture sets get lastProbeTime (null, as the apiserver sends it) and the kubelet's other conditions join them;
 * container statuses get the kubelet's details. Labels, owner references, readiness gates, affinity and container
 * images are the fixture's alone: they decide what the planner does.
 */
export function fullPod(pod: Pod): Pod {
  const p = cloneJson(pod);
  const out: Pod = {
    apiVersion: p.apiVersion ?? 'v1',
    kind: p.kind ?? 'Pod',
    metadata: {
      ...p.metadata,
      generation: p.metadata.generation ?? 1,
      resourceVersion: p.metadata.resourceVersion ?? '364',
      annotations: { ...POD_ANNOTATIONS, ...(p.metadata.annotations ?? {}) },
      managedFields: cloneJson(POD_MANAGED_FIELDS),
    },
    spec: {
      ...cloneJson(POD_SPEC),
      ...p.spec,
      containers: p.spec.containers.map((c, i) => ({
        ...cloneJson(CONTAINER_EXTRAS[Math.min(i, CONTAINER_EXTRAS.length - 1)] ?? {}),
        ...c,
      })),
    },
  };
  if (p.status) {
    const own = new Set((p.status.conditions ?? []).map((c) => c.type));
    out.status = {
      ...cloneJson(POD_STATUS),
      ...p.status,
      conditions: [
        ...(p.status.conditions ?? []).map((c) => ({ lastProbeTime: null, ...c })),
        ...cloneJson(POD_CONDITIONS).filter((c) => !own.has(c.type)),
      ] as NonNullable<Pod['status']>['conditions'],
    };
    if (p.status.containerStatuses) {
      out.status.containerStatuses = p.status.containerStatuses.map((s, i) => ({
        ...containerStatusExtras(i),
        lastState: {},
        started: true,
        ...s,
      }));
    }
  }
  return out;
}

/** A kubelet's node (v1.36, containerd) beyond what the fixtures set. */
const NODE_LABELS = {
  'beta.kubernetes.io/arch': 'amd64',
  'beta.kubernetes.io/instance-type': 'n2-standard-8',
  'beta.kubernetes.io/os': 'linux',
  'kubernetes.io/arch': 'amd64',
  'kubernetes.io/os': 'linux',
  'node.kubernetes.io/instance-type': 'n2-standard-8',
  'topology.kubernetes.io/region': 'europe-west1',
  'topology.kubernetes.io/zone': 'europe-west1-b',
};

const NODE_ANNOTATIONS = {
  'csi.volume.kubernetes.io/nodeid': '{"pd.csi.storage.gke.io":"projects/p/zones/europe-west1-b/instances/node"}',
  'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///run/containerd/containerd.sock',
  'node.alpha.kubernetes.io/ttl': '0',
  'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
};

const NODE_CONDITIONS: NodeCondition[] = (
  [
    ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
    ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
    ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
    ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
  ] as const
).map(([type, status, reason, message]) => ({
  type,
  status,
  reason,
  message,
  lastHeartbeatTime: '2026-11-24T01:14:46Z',
  lastTransitionTime: '2026-11-24T01:09:04Z',
}));

const NODE_IMAGES = [
  'registry.k8s.io/kube-proxy:v1.36.3',
  'registry.k8s.io/pause:3.10',
  'registry.k8s.io/coredns/coredns:v1.12.1',
  'docker.io/calico/node:v3.30.2',
  'docker.io/calico/cni:v3.30.2',
  'registry.example/node-agent:1.0.0',
  'registry.example/log-shipper:2.3.1',
  'quay.io/prometheus/node-exporter:v1.9.1',
  'registry.k8s.io/csi-node-driver-registrar:v2.14.0',
  'docker.io/fluent/fluent-bit:4.0.3',
].map((name, i) => ({
  names: [`${name.split(':')[0]}@sha256:${String(i).repeat(64).slice(0, 64)}`, name],
  sizeBytes: 10_000_000 + i * 7_654_321,
}));

/** `node` as the apiserver would return it: the fixture's labels, taints, unschedulable and conditions win. */
export function fullNode(node: Node): Node {
  const n = cloneJson(node);
  const name = n.metadata.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      ...n.metadata,
      uid: n.metadata.uid ?? `${name}-uid`,
      resourceVersion: n.metadata.resourceVersion ?? '367',
      creationTimestamp: n.metadata.creationTimestamp ?? '2026-11-24T01:09:04Z',
      labels: { ...NODE_LABELS, 'kubernetes.io/hostname': name, ...(n.metadata.labels ?? {}) },
      annotations: { ...NODE_ANNOTATIONS, ...(n.metadata.annotations ?? {}) },
      managedFields: cloneJson(NODE_MANAGED_FIELDS),
    },
    spec: {
      podCIDR: '10.244.3.0/24',
      podCIDRs: ['10.244.3.0/24'],
      providerID: `gce://p/europe-west1-b/${name}`,
      ...n.spec,
    },
    status: {
      addresses: [
        { type: 'InternalIP', address: '10.132.0.17' },
        { type: 'Hostname', address: name },
      ],
      allocatable: { cpu: '7910m', 'ephemeral-storage': '47093746742', memory: '29624468Ki', pods: '110' },
      capacity: { cpu: '8', 'ephemeral-storage': '98831908Ki', memory: '32863828Ki', pods: '110' },
      conditions: cloneJson(NODE_CONDITIONS),
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      images: cloneJson(NODE_IMAGES),
      nodeInfo: {
        architecture: 'amd64',
        bootID: '8c6e3c6d-0c1f-4b4e-9d0e-2f1d6a7b8c9d',
        containerRuntimeVersion: 'containerd://2.1.3',
        kernelVersion: '6.12.0-1015-gcp',
        kubeProxyVersion: 'v1.36.3',
        kubeletVersion: 'v1.36.3',
        machineID: '3b1f0e2d4c5a6b7c8d9e0f1a2b3c4d5e',
        operatingSystem: 'linux',
        osImage: 'Ubuntu 24.04.2 LTS',
        systemUUID: '3b1f0e2d-4c5a-6b7c-8d9e-0f1a2b3c4d5e',
      },
      runtimeHandlers: [{ name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } }],
      features: { supplementalGroupsPolicy: true },
      config: { active: {} },
      ...n.status,
    },
  };
}
