// The kube-apiserver audit log as evidence of who wrote what, and when: with one client identity per process
// (clientKubeconfig in e2e/cluster/cluster.ts), `user.username` tells which process made a request, and
// `requestReceivedTimestamp` when the apiserver received it. Only writes of the objects a DaemonSet controller
// touches are logged (Metadata level), so the log stays small. Audit events and policy:
// https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parsePath } from '../../src/k8s/testing/http-api.ts';

export const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [${WRITE_VERBS.join(', ')}]
    resources:
      - group: ""
        resources: ["pods", "pods/status", "pods/resize", "events"]
      - group: apps
        resources: ["controllerrevisions"]
      - group: apps.kruise.io
        resources: ["daemonsets", "daemonsets/status"]
      - group: coordination.k8s.io
        resources: ["leases"]
  - level: None
`;

/** Writes the policy into `dir` and returns the kube-apiserver flags for an audit log at `<dir>/audit.log`. */
export function auditApiserverArgs(dir: string): { args: string[]; log: string } {
  const policy = join(dir, 'audit-policy.yaml');
  const log = join(dir, 'audit.log');
  writeFileSync(policy, POLICY);
  return {
    log,
    args: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${log}`,
      '--audit-log-format=json',
      '--audit-log-maxsize=0',
      // Written as requests complete, not batched, so a test reads its own requests right after making them.
      '--audit-log-mode=blocking',
    ],
  };
}

export interface AuditWrite {
  user: string;
  verb: string;
  /** `pods`, `pods/status`, `daemonsets/status`, ... */
  resource: string;
  namespace?: string;
  name?: string;
  /** apiserver clock, ms */
  received: number;
  completed: number;
  code?: number;
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  responseStatus?: { code?: number };
}

/** Every completed write in the audit log (ResponseComplete stage; a line being written is skipped). */
export function readAuditWrites(log: string): AuditWrite[] {
  let text = '';
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return [];
  }
  const out: AuditWrite[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let e: AuditEvent;
    try {
      e = JSON.parse(line) as AuditEvent;
    } catch {
      continue;
    }
    if (e.stage !== 'ResponseComplete' || !e.verb || !WRITE_VERBS.includes(e.verb)) continue;
    out.push({
      user: e.user?.username ?? '',
      verb: e.verb,
      resource: [e.objectRef?.resource, e.objectRef?.subresource].filter(Boolean).join('/'),
      namespace: e.objectRef?.namespace,
      name: e.objectRef?.name,
      received: Date.parse(e.requestReceivedTimestamp ?? ''),
      completed: Date.parse(e.stageTimestamp ?? ''),
      code: e.responseStatus?.code,
    });
  }
  return out;
}

/** The writes a DaemonSet controller may make only while it leads: pods, pod status, revisions, DaemonSet status. */
export const FENCED_RESOURCES = [
  'pods',
  'pods/status',
  'pods/resize',
  'controllerrevisions',
  'daemonsets',
  'daemonsets/status',
];

export function describeWrite(w: AuditWrite): string {
  return `${new Date(w.received).toISOString()} ${w.user} ${w.verb} ${w.resource} ${w.namespace ?? ''}/${w.name ?? ''} -> ${w.code ?? '?'}`;
}

/**
 * Whether `w` is the request a client named as `verb path` (KubeClient's verbs are the audit log's; `path` without
 * its query). A create names its collection: any object created there matches.
 */
export function isRequest(w: AuditWrite, verb: string, path: string): boolean {
  const p = parsePath(path);
  if (!p || p.resourceMissing || verb !== w.verb) return false;
  const resource = p.collection.slice(p.collection.lastIndexOf('/') + 1);
  if ([resource, p.subresource].filter(Boolean).join('/') !== w.resource || p.namespace !== w.namespace) return false;
  return p.name === undefined ? verb === 'create' : p.name === w.name;
}
