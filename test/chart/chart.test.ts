// charts/advanced-daemonset: `helm lint` and `helm template` over the values files in the chart's
// ci/ folder, with the rendered objects parsed and checked: the Deployment's probes and
// security, the webhook configurations (equal to certs/webhook-config.ts), the CRD (equal to
// src/api/crd.ts, with its conversion webhook), RBAC rule by rule, the certificate modes, and
// the schema's messages for bad values.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { join } from 'node:path';
import { assessMaterial, materialFromSecret } from '../../certs/bootstrap.ts';
import { CERT_MODES } from '../../certs/modes.ts';
import { crdConversion, webhookConfigurations } from '../../certs/webhook-config.ts';
import { crdObject, settingCrdObject } from '../../src/api/crd.ts';
import { generatedChartReadme, valueRows } from '../../hack/chart-readme.ts';
import {
  assertDaemonSetSettingWebhookPolicy,
  assertDaemonSetWebhookPolicy,
} from '../../certs/testing/webhook-policy.ts';
import { managerCommand, managerFlags } from '../../cmd/advanced-daemonset/manager.ts';
import { parseFlags } from '../../src/cli/command.ts';
import { CPU_REQUEST_ENV } from '../../src/cli/cpu.ts';
import { chartDir, ciValues, find, helm, helmMissing, helmOk, render, templateArgs, type Rendered } from './helm.ts';
import { metricNames, renderedDashboards, ruleQueries, shippedQueries } from './promql.ts';

const ns = 'kruise-system';
const fullname = 'ads-advanced-daemonset';
const podLabels = { 'app.kubernetes.io/name': 'advanced-daemonset', 'app.kubernetes.io/instance': 'ads' };

const container = (objects: Rendered[]) => find(objects, 'Deployment').spec.template.spec.containers[0];
const args = (objects: Rendered[]) => container(objects).args as string[];
const flag = (objects: Rendered[], name: string) => {
  const found = args(objects).filter((a) => a.startsWith(`--${name}=`));
  return found.length === 1 ? found[0]!.slice(name.length + 3) : undefined;
};
const webhooks = (objects: Rendered[]) => [
  find(objects, 'MutatingWebhookConfiguration').webhooks[0],
  find(objects, 'ValidatingWebhookConfiguration').webhooks[0],
];
/** The DaemonSetSetting webhooks, second in each configuration. */
const settingWebhooks = (objects: Rendered[]) => [
  find(objects, 'MutatingWebhookConfiguration').webhooks[1],
  find(objects, 'ValidatingWebhookConfiguration').webhooks[1],
];
const DAEMONSET_CRD = 'daemonsets.apps.kruise.io';
const SETTING_CRD = 'daemonsetsettings.advanced-daemonset.io';

/** The ClusterRole the manager needs: what the controller and the certificate code call. */
const expectedClusterRules = [
  { apiGroups: ['apps.kruise.io'], resources: ['daemonsets'], verbs: ['get', 'list', 'watch', 'update'] },
  { apiGroups: ['apps.kruise.io'], resources: ['daemonsets/status'], verbs: ['patch'] },
  { apiGroups: ['apps.kruise.io'], resources: ['daemonsets/finalizers'], verbs: ['update'] },
  { apiGroups: ['advanced-daemonset.io'], resources: ['daemonsetsettings'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['advanced-daemonset.io'], resources: ['daemonsetsettings/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'create', 'delete', 'patch'] },
  { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods/resize'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
  {
    apiGroups: ['apps'],
    resources: ['controllerrevisions'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
    resourceNames: [`${fullname}-mutating`, `${fullname}-validating`],
    verbs: ['get', 'update', 'patch'],
  },
  {
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    resourceNames: ['daemonsets.apps.kruise.io'],
    verbs: ['get', 'update', 'patch'],
  },
  {
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions/status'],
    resourceNames: ['daemonsets.apps.kruise.io'],
    verbs: ['patch'],
  },
  // metrics.secure: who may read /metrics.
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/** The conversion webhook of the rendered CRD: the chart's Service at /convert. */
const conversionService = { namespace: ns, name: `${fullname}-webhook`, port: 443 };

const leaseRules = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: [`${fullname}-controller`],
    verbs: ['get', 'update'],
  },
];
const secretRules = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  { apiGroups: [''], resources: ['secrets'], resourceNames: [`${fullname}-webhook-certs`], verbs: ['get', 'update'] },
];

test("the chart README's values table is current (npm run gen:chart-readme) and documents every value", () => {
  assert.equal(
    readFileSync(join(chartDir, 'README.md'), 'utf8'),
    generatedChartReadme(),
    'the chart README differs from what npm run gen:chart-readme writes: run it',
  );
  const rows = valueRows(
    readFileSync(join(chartDir, 'values.yaml'), 'utf8'),
    JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8')) as object,
  );
  const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const missing = Object.keys(values).filter((k) => !rows.some((r) => r.key === k || r.key.startsWith(`${k}.`)));
  assert.deepEqual(missing, [], 'top-level values missing from the table');
  assert.deepEqual(
    rows.filter((r) => !r.description).map((r) => r.key),
    [],
    'values without a "# --" comment in values.yaml',
  );
});

describe('helm chart', { skip: helmMissing() }, () => {
  test('helm lint --strict passes for every values file in ci/', async () => {
    const files = readdirSync(join(chartDir, 'ci')).filter((f) => f.endsWith('-values.yaml'));
    assert.ok(files.length >= 6, `values files in ci/: ${files.join(', ')}`);
    for (const f of files) {
      const out = await helmOk(['lint', chartDir, '--strict', '-f', join(chartDir, 'ci', f)]);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/, f);
    }
  });

  test('every ci/ values file renders manager args the manager accepts', async () => {
    for (const f of readdirSync(join(chartDir, 'ci')).filter((f) => f.endsWith('-values.yaml'))) {
      const [command, ...rest] = args(await render({ valuesFiles: [join(chartDir, 'ci', f)] }));
      assert.equal(command, 'manager', f);
      // The manager's own parser: a flag it does not define, or a value it refuses (--feature-gates,
      // --cert-mode, ...), throws, naming it.
      const parsed = parseFlags(managerCommand, rest, managerFlags);
      assert.ok(parsed?.given.has('cert-mode'), `${f}: --cert-mode`);
      assert.ok((CERT_MODES as readonly string[]).includes(parsed!.values['cert-mode']), `${f}: --cert-mode`);
    }
  });

  describe('defaults (self-signed certificates)', async () => {
    const objects = await render({ valuesFiles: [ciValues('default')] });

    test('renders exactly the expected objects, all in the release namespace', () => {
      assert.deepEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(), [
        `ClusterRole/${fullname}`,
        // Bind a scraper to it to read /metrics (metrics.secure).
        `ClusterRole/${fullname}-metrics-reader`,
        `ClusterRoleBinding/${fullname}`,
        'CustomResourceDefinition/daemonsets.apps.kruise.io',
        'CustomResourceDefinition/daemonsetsettings.advanced-daemonset.io',
        `Deployment/${fullname}`,
        // Empty, taken by the managers' leader election, and removed by `helm uninstall` with the rest.
        `Lease/${fullname}-controller`,
        `MutatingWebhookConfiguration/${fullname}-mutating`,
        `PodDisruptionBudget/${fullname}`,
        `Role/${fullname}`,
        `RoleBinding/${fullname}`,
        `Secret/${fullname}-webhook-certs`,
        `Service/${fullname}-webhook`,
        `ServiceAccount/${fullname}`,
        `ValidatingWebhookConfiguration/${fullname}-validating`,
      ]);
      const clusterScoped = [
        'ClusterRole',
        'ClusterRoleBinding',
        'CustomResourceDefinition',
        'MutatingWebhookConfiguration',
        'ValidatingWebhookConfiguration',
      ];
      for (const o of objects) {
        if (clusterScoped.includes(o.kind)) assert.equal(o.metadata.namespace, undefined, o.kind);
        else assert.equal(o.metadata.namespace, ns, `${o.kind} ${o.metadata.name}`);
        assert.ok(o.metadata.name.length <= 63, o.metadata.name);
        assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm');
      }
    });

    test('Deployment: 2 replicas, manager args wired to the other objects, POD_NAMESPACE', () => {
      const d = find(objects, 'Deployment');
      assert.equal(d.spec.replicas, 2);
      assert.deepEqual(d.spec.selector.matchLabels, podLabels);
      assert.equal(d.spec.strategy.rollingUpdate.maxUnavailable, 0, 'a rollout never lowers serving replicas');
      assert.equal(args(objects)[0], 'manager');
      assert.equal(flag(objects, 'leader-elect'), 'true');
      assert.equal(flag(objects, 'leader-election-namespace'), ns);
      assert.equal(flag(objects, 'leader-election-id'), `${fullname}-controller`);
      assert.equal(flag(objects, 'cert-mode'), 'self-signed');
      assert.equal(flag(objects, 'cert-dir'), '/tmp/k8s-webhook-server/serving-certs');
      assert.equal(flag(objects, 'cert-secret-name'), find(objects, 'Secret').metadata.name);
      assert.equal(flag(objects, 'webhook-service-name'), find(objects, 'Service').metadata.name);
      assert.equal(flag(objects, 'webhook-configuration-name'), fullname);
      assert.equal(flag(objects, 'webhook-port'), '9876');
      assert.equal(flag(objects, 'webhook-timeout-seconds'), '10');
      assert.equal(flag(objects, 'log-level'), 'info');
      assert.equal(flag(objects, 'feature-gates'), undefined, 'no --feature-gates unless set');
      assert.equal(flag(objects, 'kruise-pod-ready-gate'), 'always', 'KruisePodReady gate on every pod, as Kruise');
      assert.equal(flag(objects, 'webhook-host'), undefined, 'in cluster the Service is used, never a host URL');
      const env = container(objects).env as { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
      assert.equal(env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
      // The webhook sizes its concurrency by the container's CPU request (src/cli/cpu.ts), not the node's cores.
      assert.deepEqual(
        (env.find((e) => e.name === CPU_REQUEST_ENV) as { valueFrom?: unknown } | undefined)?.valueFrom,
        { resourceFieldRef: { containerName: 'manager', resource: 'requests.cpu', divisor: '1m' } },
      );
      assert.equal(d.spec.template.spec.serviceAccountName, find(objects, 'ServiceAccount').metadata.name);
      assert.equal(d.spec.template.spec.containers[0].image, 'advanced-daemonset:0.1.0', 'tag defaults to appVersion');
    });

    test('probes: liveness /healthz and readiness /readyz on the health port', () => {
      const c = container(objects);
      const health = (c.ports as { name: string; containerPort: number }[]).find((p) => p.name === 'health');
      assert.equal(health?.containerPort, 8081);
      assert.equal(flag(objects, 'health-port'), '8081');
      assert.deepEqual(c.livenessProbe.httpGet, { path: '/healthz', port: 'health' });
      assert.deepEqual(c.readinessProbe.httpGet, { path: '/readyz', port: 'health' });
      assert.ok(
        c.livenessProbe.failureThreshold * c.livenessProbe.periodSeconds >= 30,
        'liveness is not trigger-happy',
      );
    });

    test('security: non-root, read-only root with emptyDir /tmp, no escalation, no capabilities, RuntimeDefault seccomp', () => {
      const spec = find(objects, 'Deployment').spec.template.spec;
      assert.equal(spec.securityContext.runAsNonRoot, true);
      assert.ok(spec.securityContext.runAsUser > 0);
      assert.deepEqual(spec.securityContext.seccompProfile, { type: 'RuntimeDefault' });
      const c = container(objects);
      assert.deepEqual(c.securityContext, {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      assert.deepEqual(c.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }], 'the cert dir lives in the /tmp emptyDir');
      assert.deepEqual(spec.volumes, [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
    });

    test('resources: requests 100m/256Mi; termination grace covers the webhook drain', () => {
      const c = container(objects);
      assert.deepEqual(c.resources.requests, { cpu: '100m', memory: '256Mi' });
      assert.equal(flag(objects, 'webhook-drain'), '10s');
      const grace = find(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds;
      assert.ok(grace >= 10 + 5, `terminationGracePeriodSeconds ${grace} covers a 10s drain plus shutdown`);
    });

    test('spreading: preferred anti-affinity by node and a zone spread, both on the pod labels', () => {
      const spec = find(objects, 'Deployment').spec.template.spec;
      const term = spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm;
      assert.equal(term.topologyKey, 'kubernetes.io/hostname');
      assert.deepEqual(term.labelSelector.matchLabels, podLabels);
      assert.deepEqual(spec.topologySpreadConstraints, [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: podLabels },
        },
      ]);
    });

    test('Service routes 443 to the webhook port and exposes metrics; PDB keeps one replica', () => {
      const svc = find(objects, 'Service');
      assert.deepEqual(svc.spec.selector, podLabels);
      assert.deepEqual(svc.spec.ports, [
        { name: 'https', port: 443, targetPort: 'webhook', protocol: 'TCP' },
        { name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' },
      ]);
      const pdb = find(objects, 'PodDisruptionBudget');
      assert.equal(pdb.spec.minAvailable, 1);
      assert.deepEqual(pdb.spec.selector.matchLabels, podLabels);
    });

    test('the manager runs at system-cluster-critical priority', () => {
      assert.equal(find(objects, 'Deployment').spec.template.spec.priorityClassName, 'system-cluster-critical');
    });

    test('webhook configurations equal certs/webhook-config.ts (scope, failurePolicy Fail, sideEffects None) with a Service reference', () => {
      const expected = webhookConfigurations({
        name: fullname,
        endpoint: { service: { namespace: ns, name: `${fullname}-webhook`, port: 443 } },
        caBundle: '',
      });
      for (const { rendered, want } of [
        { rendered: find(objects, 'MutatingWebhookConfiguration'), want: expected.mutating },
        { rendered: find(objects, 'ValidatingWebhookConfiguration'), want: expected.validating },
      ] as const) {
        assert.equal(rendered.metadata.name, want.metadata.name);
        // The DaemonSet webhook, then the DaemonSetSetting one: the same in both.
        assert.equal(rendered.webhooks.length, 2);
        (want.webhooks as Record<string, { caBundle?: string }>[]).forEach((w, i) => {
          const wantHook = structuredClone(w);
          delete wantHook.clientConfig!.caBundle;
          const { namespaceSelector, ...hook } = rendered.webhooks[i];
          assert.deepEqual(hook, wantHook);
          // The control plane's namespace and the manager's own are never behind the webhook.
          assert.deepEqual(namespaceSelector, {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', ns] }],
          });
        });
      }
      for (const w of webhooks(objects)) {
        assertDaemonSetWebhookPolicy(w);
        assert.equal(w.clientConfig.caBundle, undefined, 'self-signed: the manager injects caBundle');
      }
      for (const w of settingWebhooks(objects)) {
        assertDaemonSetSettingWebhookPolicy(w);
        assert.equal(w.clientConfig.caBundle, undefined, 'self-signed: the manager injects caBundle');
      }
    });

    test('RBAC: the ClusterRole holds exactly the rules the manager uses; the Role only its Lease and Secret', () => {
      assert.deepEqual(find(objects, 'ClusterRole', fullname).rules, expectedClusterRules);
      assert.deepEqual(find(objects, 'Role').rules, [...leaseRules, ...secretRules]);
      const sa = { kind: 'ServiceAccount', name: fullname, namespace: ns };
      assert.deepEqual(find(objects, 'ClusterRoleBinding').subjects, [sa]);
      assert.deepEqual(find(objects, 'RoleBinding').subjects, [sa]);
      assert.deepEqual(find(objects, 'ClusterRoleBinding').roleRef, {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: fullname,
      });
      for (const r of find(objects, 'ClusterRole', fullname).rules as { resources: string[]; verbs: string[] }[]) {
        assert.ok(!r.verbs.includes('*') && !r.resources.includes('*'), 'no wildcards');
        assert.ok(!r.resources.includes('secrets'), 'no cluster-wide Secret access');
      }
    });

    test('the certificate Secret is rendered with a throwaway certificate, no CA: the manager replaces it at once', () => {
      const secret = find(objects, 'Secret');
      assert.equal(secret.type, 'kubernetes.io/tls');
      assert.deepEqual(Object.keys(secret.data).sort(), ['tls.crt', 'tls.key']);
      // Valid PEM, so the apiserver does not warn "tls: failed to find any PEM data in certificate input".
      const cert = new X509Certificate(Buffer.from(secret.data['tls.crt'], 'base64'));
      assert.ok(cert.checkPrivateKey(createPrivateKey(Buffer.from(secret.data['tls.key'], 'base64'))));
      const material = materialFromSecret(secret);
      assert.deepEqual(assessMaterial(material, ['x.ns.svc'], new Date()), { state: 'renew-ca', reason: 'no CA' });
    });
  });

  describe('cert-manager mode', async () => {
    const objects = await render({ valuesFiles: [ciValues('cert-manager')] });

    test('a private CA chain (self-signed Issuer, CA Certificate, CA Issuer) issues the serving Certificate', () => {
      const issuers = objects.filter((o) => o.kind === 'Issuer').map((o) => o.metadata.name);
      assert.deepEqual(issuers.sort(), [`${fullname}-ca`, `${fullname}-selfsigned`]);
      const ca = find(objects, 'Certificate', `${fullname}-ca`);
      assert.equal(ca.spec.isCA, true);
      assert.equal(ca.spec.issuerRef.name, `${fullname}-selfsigned`);
      const serving = find(objects, 'Certificate', `${fullname}-webhook`);
      assert.equal(serving.apiVersion, 'cert-manager.io/v1');
      assert.deepEqual(serving.spec.issuerRef, { name: `${fullname}-ca`, kind: 'Issuer', group: 'cert-manager.io' });
      assert.deepEqual(serving.spec.dnsNames, [
        `${fullname}-webhook.${ns}.svc`,
        `${fullname}-webhook.${ns}.svc.cluster.local`,
      ]);
      assert.equal(serving.spec.secretName, `${fullname}-webhook-certs`);
    });

    test('webhooks carry inject-ca-from for cainjector, no caBundle, the configured timeout', () => {
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        const c = find(objects, kind);
        assert.equal(c.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${ns}/${fullname}-webhook`);
        assert.equal(c.webhooks.length, 2);
        for (const w of c.webhooks) {
          assert.equal(w.clientConfig.caBundle, undefined);
          assert.equal(w.timeoutSeconds, 30);
        }
      }
    });

    test('the CRD conversion webhook gets its caBundle from cainjector too', () => {
      const crd = find(objects, 'CustomResourceDefinition', DAEMONSET_CRD);
      assert.equal(crd.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${ns}/${fullname}-webhook`);
      assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
      assert.equal(crd.spec.conversion.webhook.clientConfig.caBundle, undefined);
      assert.deepEqual(crd.spec.conversion.webhook.clientConfig.service, { ...conversionService, path: '/convert' });
    });

    test('the pod mounts the Certificate Secret read-only at the cert dir; no Secret rights, no rendered Secret', () => {
      assert.equal(flag(objects, 'cert-mode'), 'cert-manager');
      const c = container(objects);
      assert.deepEqual(
        c.volumeMounts.find((m: { name: string }) => m.name === 'certs'),
        { name: 'certs', mountPath: '/tmp/k8s-webhook-server/serving-certs', readOnly: true },
      );
      const volume = find(objects, 'Deployment').spec.template.spec.volumes.find(
        (v: { name: string }) => v.name === 'certs',
      );
      assert.equal(volume.secret.secretName, `${fullname}-webhook-certs`);
      assert.deepEqual(find(objects, 'Role').rules, leaseRules);
      assert.equal(objects.filter((o) => o.kind === 'Secret').length, 0);
    });

    test('an existing issuer replaces the chart-made CA', async () => {
      const withIssuer = await render({ valuesFiles: [ciValues('cert-manager-issuer')] });
      assert.equal(withIssuer.filter((o) => o.kind === 'Issuer').length, 0);
      assert.deepEqual(find(withIssuer, 'Certificate').spec.issuerRef, {
        name: 'corp-ca',
        kind: 'ClusterIssuer',
        group: 'cert-manager.io',
      });
    });
  });

  describe('external mode', async () => {
    const objects = await render({ valuesFiles: [ciValues('external')] });

    test('caBundle comes from values, the certificate from the user Secret, nothing cert-related is created', () => {
      for (const w of [...webhooks(objects), ...settingWebhooks(objects)]) {
        assert.equal(
          w.clientConfig.caBundle,
          'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ4ZkNDQVd1Z0F3SUJBZ0lRCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K',
        );
      }
      const crd = find(objects, 'CustomResourceDefinition', DAEMONSET_CRD);
      assert.equal(
        crd.spec.conversion.webhook.clientConfig.caBundle,
        'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ4ZkNDQVd1Z0F3SUJBZ0lRCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K',
        'the CRD conversion webhook trusts the same caBundle',
      );
      assert.equal(crd.metadata.annotations?.['cert-manager.io/inject-ca-from'], undefined);
      assert.equal(flag(objects, 'cert-mode'), 'external');
      assert.equal(flag(objects, 'cert-secret-name'), 'my-webhook-tls');
      const volume = find(objects, 'Deployment').spec.template.spec.volumes.find(
        (v: { name: string }) => v.name === 'certs',
      );
      assert.equal(volume.secret.secretName, 'my-webhook-tls');
      assert.equal(objects.filter((o) => ['Secret', 'Certificate', 'Issuer'].includes(o.kind)).length, 0);
      assert.deepEqual(find(objects, 'Role').rules, leaseRules);
    });
  });

  describe('custom values', async () => {
    const objects = await render({ valuesFiles: [ciValues('custom')] });

    test('image, replicas, resources, log level and feature gates', () => {
      const d = find(objects, 'Deployment');
      assert.equal(d.spec.replicas, 3);
      const c = container(objects);
      assert.equal(c.image, 'registry.example.com/platform/advanced-daemonset:1.2.3');
      assert.equal(c.imagePullPolicy, 'Always');
      assert.deepEqual(d.spec.template.spec.imagePullSecrets, [{ name: 'regcred' }]);
      assert.deepEqual(c.resources, {
        requests: { cpu: '250m', memory: '512Mi' },
        limits: { cpu: '1', memory: '1Gi' },
      });
      assert.equal(flag(objects, 'log-level'), 'debug');
      assert.equal(
        flag(objects, 'feature-gates'),
        'PreDownloadImageForDaemonSetUpdate=true,KruisePodReadinessGate=false',
      );
      assert.equal(flag(objects, 'image-predownload'), 'imagepulljob');
      const imagePullJobRules = find(objects, 'ClusterRole', fullname).rules.filter((r: { resources: string[] }) =>
        r.resources.includes('imagepulljobs'),
      );
      assert.deepEqual(
        imagePullJobRules,
        [{ apiGroups: ['apps.kruise.io'], resources: ['imagepulljobs'], verbs: ['list', 'create', 'delete'] }],
        'the ImagePullJob mode gets exactly the verbs it uses',
      );
      assert.equal(find(objects, 'PodDisruptionBudget').spec.minAvailable, 2);
    });

    test('nodeReadiness.manageTaints adds exactly patch on nodes; without it the manager cannot write nodes', async () => {
      const nodeRules = (o: Rendered[]) =>
        find(o, 'ClusterRole', fullname).rules.filter((r: { resources: string[] }) => r.resources.includes('nodes'));
      assert.deepEqual(nodeRules(await render({ set: ['nodeReadiness.manageTaints=true'] })), [
        { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
        { apiGroups: [''], resources: ['nodes'], verbs: ['patch'] },
      ]);
      assert.deepEqual(nodeRules(objects), [{ apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] }]);
    });

    test('placement: nodeSelector, tolerations, a user affinity replacing the default, priority class', () => {
      const spec = find(objects, 'Deployment').spec.template.spec;
      assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' });
      assert.deepEqual(spec.tolerations, [
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
      ]);
      assert.deepEqual(Object.keys(spec.affinity), ['nodeAffinity']);
      assert.equal(spec.priorityClassName, 'node-agents-critical');
    });

    test('webhook port, timeout, namespaceSelector, excluded namespaces and drain reach the pod and the configurations', () => {
      const c = container(objects);
      assert.equal(c.ports.find((p: { name: string }) => p.name === 'webhook').containerPort, 10250);
      assert.equal(flag(objects, 'webhook-port'), '10250');
      assert.equal(flag(objects, 'webhook-drain'), '15s');
      assert.equal(find(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds, 45);
      for (const w of [...webhooks(objects), ...settingWebhooks(objects)]) {
        assert.equal(w.timeoutSeconds, 5);
        assert.deepEqual(w.namespaceSelector, {
          matchExpressions: [
            { key: 'team', operator: 'In', values: ['agents'] },
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-public', ns] },
          ],
        });
      }
    });
  });

  test('ServiceMonitor (opt-in) scrapes the metrics port of the chart Service', async () => {
    assert.equal((await render()).filter((o) => o.kind === 'ServiceMonitor').length, 0);
    const objects = await render({ valuesFiles: [ciValues('servicemonitor')] });
    const sm = find(objects, 'ServiceMonitor');
    assert.equal(sm.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(sm.metadata.labels?.release, 'prometheus');
    assert.deepEqual(sm.spec.selector.matchLabels, podLabels);
    const svc = find(objects, 'Service');
    for (const [k, v] of Object.entries(podLabels)) assert.equal(svc.metadata.labels?.[k], v);
    // honorLabels: the kruise_daemonset_* series keep their own namespace label (the DaemonSet's).
    // metrics.secure (the default): HTTPS with the scraper's token; the manager's certificate is self-signed.
    assert.deepEqual(sm.spec.endpoints, [
      { port: 'metrics', path: '/metrics', scheme: 'https', tlsConfig: { insecureSkipVerify: true }, bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', honorLabels: true, interval: '15s', scrapeTimeout: '10s' }, // prettier-ignore
    ]);
    const plain = find(
      await render({ valuesFiles: [ciValues('servicemonitor')], set: ['metrics.secure=false'] }),
      'ServiceMonitor',
    );
    assert.deepEqual(plain.spec.endpoints, [
      { port: 'metrics', path: '/metrics', scheme: 'http', honorLabels: true, interval: '15s', scrapeTimeout: '10s' },
    ]);
    const reader = find(objects, 'ClusterRole', `${fullname}-metrics-reader`);
    assert.deepEqual(reader.rules, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    assert.deepEqual(sm.spec.namespaceSelector, { matchNames: [ns] });
  });

  describe('monitoring: PrometheusRule and Grafana dashboard (opt-in)', async () => {
    const defaults = await render();
    const objects = await render({ valuesFiles: [ciValues('monitoring')] });
    /** Both on with every other value at its default. */
    const defaultsOn = await render({ set: ['prometheusRule.enabled=true', 'grafanaDashboard.enabled=true'] });
    const alerts = (o: Rendered[]) =>
      find(o, 'PrometheusRule').spec.groups.flatMap((g: { rules: { alert: string }[] }) => g.rules);
    const alert = (o: Rendered[], name: string) => alerts(o).find((r: { alert: string }) => r.alert === name);

    test('off by default: no PrometheusRule, no dashboard ConfigMap', () => {
      assert.equal(defaults.filter((o) => o.kind === 'PrometheusRule').length, 0);
      assert.equal(defaults.filter((o) => o.kind === 'ConfigMap').length, 0);
    });

    test('the PrometheusRule: its labels, the alerts, the thresholds from values, alert labels merged', () => {
      const rule = find(objects, 'PrometheusRule');
      assert.equal(rule.apiVersion, 'monitoring.coreos.com/v1');
      assert.equal(rule.metadata.namespace, ns);
      assert.equal(rule.metadata.labels?.release, 'prometheus');
      assert.deepEqual(
        alerts(objects)
          .map((r: { alert: string }) => r.alert)
          .sort(),
        [
          'AdvancedDaemonSetCanaryFailed',
          'AdvancedDaemonSetMisscheduled',
          'AdvancedDaemonSetNoLeader',
          'AdvancedDaemonSetPodOperationErrors',
          'AdvancedDaemonSetRolloutStuck',
          'AdvancedDaemonSetUnavailableAboveMaxUnavailable',
        ],
      );
      for (const r of alerts(objects)) {
        assert.equal(r.labels.team, 'platform', r.alert);
        assert.match(r.labels.severity, /^(warning|critical)$/, r.alert);
        assert.ok(r.annotations.summary && r.annotations.description, r.alert);
      }
      // ci/monitoring-values.yaml: rolloutStuckSeconds 900.
      const stuck = alert(objects, 'AdvancedDaemonSetRolloutStuck');
      assert.match(stuck.expr, /kruise_daemonset_rollout_duration_seconds > 900\b/);
      assert.match(stuck.expr, /\[900s\]/);
      assert.doesNotMatch(stuck.expr, /1800/);
      assert.match(alert(defaultsOn, 'AdvancedDaemonSetRolloutStuck').expr, /> 1800\b/, 'default 1800 s');
      // Alert annotations keep Prometheus's own templates (not Helm's).
      assert.match(stuck.annotations.description, /\{\{ \$labels\.namespace \}\}\/\{\{ \$labels\.daemonset \}\}/);
      const noLeader = alert(objects, 'AdvancedDaemonSetNoLeader');
      assert.equal(noLeader.labels.severity, 'critical');
      assert.equal(noLeader.for, '2m');
      assert.match(noLeader.expr, new RegExp(`leader_election_master_status\\{name="${fullname}-controller"\\}`));
      assert.equal(alert(objects, 'AdvancedDaemonSetMisscheduled').for, '15m');
    });

    test('no leader alert without leader election; a severity in alertLabels wins', async () => {
      const single = await render({
        valuesFiles: [ciValues('single-replica')],
        set: ['prometheusRule.enabled=true', 'prometheusRule.alertLabels.severity=page'],
      });
      assert.equal(alert(single, 'AdvancedDaemonSetNoLeader'), undefined);
      assert.ok(alerts(single).length >= 5);
      for (const r of alerts(single)) assert.equal(r.labels.severity, 'page', r.alert);
    });

    test('every rule expression and dashboard query is PromQL the Prometheus parser accepts, reading metrics', () => {
      for (const o of [objects, defaultsOn]) {
        const queries = shippedQueries(o);
        assert.ok(ruleQueries(o).length >= 6, 'rule expressions found');
        assert.ok(queries.length > ruleQueries(o).length + 10, 'dashboard queries found');
        for (const q of queries) assert.ok(metricNames(q.expr).length > 0, `${q.where} reads a metric: ${q.expr}`);
      }
    });

    test('the dashboard ConfigMap: sidecar label, namespace and annotations from values, the JSON of dashboards/', async () => {
      const cm = find(objects, 'ConfigMap');
      assert.equal(cm.metadata.name, `${fullname}-dashboard`);
      assert.equal(cm.metadata.namespace, 'monitoring');
      assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
      assert.equal(cm.metadata.annotations?.grafana_folder, 'Kruise');
      const file = readFileSync(join(chartDir, 'dashboards', 'advanced-daemonset.json'), 'utf8');
      assert.deepEqual(JSON.parse(cm.data['advanced-daemonset.json']), JSON.parse(file));
      const [d] = renderedDashboards(objects);
      assert.equal(d?.dashboard.title, 'Advanced DaemonSet');
      assert.equal(find(defaultsOn, 'ConfigMap').metadata.namespace, ns, 'the release namespace by default');
      // The user's labels win over the default sidecar label.
      const relabelled = await render({
        set: ['grafanaDashboard.enabled=true', 'grafanaDashboard.labels.grafana_dashboard=ads'],
      });
      assert.equal(find(relabelled, 'ConfigMap').metadata.labels?.grafana_dashboard, 'ads');
    });
  });

  test('the certificate Secret is mounted at mode 0440, readable through the pod fsGroup by the non-root user', async () => {
    for (const mode of ['cert-manager', 'external']) {
      const objects = await render({ valuesFiles: [ciValues(mode)] });
      const pod = find(objects, 'Deployment').spec.template.spec;
      const volume = pod.volumes.find((v: { name: string }) => v.name === 'certs');
      assert.equal(volume.secret.defaultMode, 0o440, mode);
      assert.equal(pod.securityContext.fsGroup, 65532, mode);
      assert.equal(pod.securityContext.runAsUser, 65532, mode);
      assert.equal(pod.securityContext.runAsGroup, 65532, mode);
    }
  });

  test('NetworkPolicy (opt-in): webhook port from anywhere, metrics port only from the selected peers', async () => {
    assert.equal((await render()).filter((o) => o.kind === 'NetworkPolicy').length, 0);
    const objects = await render({ valuesFiles: [ciValues('networkpolicy')] });
    const np = find(objects, 'NetworkPolicy');
    assert.equal(np.metadata.namespace, ns);
    assert.deepEqual(np.spec.podSelector, { matchLabels: podLabels });
    assert.deepEqual(np.spec.policyTypes, ['Ingress']);
    assert.deepEqual(np.spec.ingress, [
      { ports: [{ port: 'webhook', protocol: 'TCP' }] },
      {
        ports: [{ port: 'metrics', protocol: 'TCP' }],
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
          },
        ],
      },
      { ports: [{ port: 9999, protocol: 'TCP' }] },
    ]);
    // The named ports exist on the container.
    const names = container(objects).ports.map((p: { name: string }) => p.name);
    assert.ok(names.includes('webhook') && names.includes('metrics'), names.join());
    // No selector: the metrics port is not admitted at all (the webhook rule stays).
    const closed = await render({ set: ['networkPolicy.enabled=true'] });
    assert.deepEqual(find(closed, 'NetworkPolicy').spec.ingress, [{ ports: [{ port: 'webhook', protocol: 'TCP' }] }]);
  });

  test('health and metrics bind addresses replace the port flags', async () => {
    const objects = await render({ valuesFiles: [ciValues('networkpolicy')] });
    assert.equal(flag(objects, 'health-probe-bind-address'), ':8081');
    assert.equal(flag(objects, 'metrics-bind-address'), '127.0.0.1:8080');
    assert.equal(flag(objects, 'health-port'), undefined);
    assert.equal(flag(objects, 'metrics-port'), undefined);
    const defaults = await render();
    assert.equal(flag(defaults, 'metrics-port'), '8080');
    assert.equal(flag(defaults, 'metrics-bind-address'), undefined);
    assert.equal(flag(defaults, 'metrics-secure'), 'true');
    assert.equal(flag(await render({ set: ['metrics.secure=false'] }), 'metrics-secure'), undefined);
  });

  test('a single replica without leader election gets no PodDisruptionBudget', async () => {
    const objects = await render({ valuesFiles: [ciValues('single-replica')] });
    assert.equal(objects.filter((o) => o.kind === 'PodDisruptionBudget').length, 0);
    assert.equal(flag(objects, 'leader-elect'), 'false');
  });

  describe('the CRD: a template (upgraded by Helm), kept on uninstall, with the conversion webhook', () => {
    /** [name, served, storage] of each version of a rendered CRD. */
    const servedAndStored = (crd: Rendered) =>
      crd.spec.versions.map((v: { name: string; served: boolean; storage: boolean }) => [v.name, v.served, v.storage]);

    for (const storageVersion of ['v1beta1', 'v1alpha1'] as const) {
      test(`crd.storageVersion ${storageVersion}: equal to src/api/crd.ts, converting through the webhook Service`, async () => {
        const objects = await render(
          storageVersion === 'v1beta1' ? {} : { set: [`crd.storageVersion=${storageVersion}`] },
        );
        const crd = find(objects, 'CustomResourceDefinition', DAEMONSET_CRD);
        const want = crdObject({
          storageVersion,
          conversion: { service: { ...conversionService, path: '/convert' } },
        }) as unknown as Rendered;
        assert.deepEqual(crd.spec, want.spec);
        assert.deepEqual(servedAndStored(crd), [
          ['v1alpha1', true, storageVersion === 'v1alpha1'],
          ['v1beta1', true, storageVersion === 'v1beta1'],
        ]);
        // The same conversion block the manager registers (certs/webhook-config.ts), but for the caBundle.
        const expected = crdConversion({ service: conversionService }, '') as { webhook: { clientConfig: object } };
        delete (expected.webhook.clientConfig as { caBundle?: string }).caBundle;
        assert.deepEqual(crd.spec.conversion, expected);
        assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
        assert.equal(crd.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm');
        assert.equal(
          crd.spec.conversion.webhook.clientConfig.caBundle,
          undefined,
          'self-signed: the manager injects it',
        );
      });
    }

    test('crd.servedVersions {v1alpha1}: v1beta1 kept in the CRD but not served; the manager reads v1alpha1', async () => {
      const objects = await render({ set: ['crd.storageVersion=v1alpha1', 'crd.servedVersions={v1alpha1}'] });
      const crd = find(objects, 'CustomResourceDefinition', DAEMONSET_CRD);
      const want = crdObject({
        storageVersion: 'v1alpha1',
        servedVersions: ['v1alpha1'],
        conversion: { service: { ...conversionService, path: '/convert' } },
      }) as unknown as Rendered;
      assert.deepEqual(crd.spec, want.spec);
      assert.deepEqual(servedAndStored(crd), [
        ['v1alpha1', true, true],
        ['v1beta1', false, false],
      ]);
      assert.equal(flag(objects, 'daemonset-api-version'), 'v1alpha1');
      assert.equal(flag(await render({}), 'daemonset-api-version'), undefined, 'the default reads v1beta1');
    });

    test('crd.servedVersions without the storage version is refused, saying what to set', async () => {
      const r = await helm(templateArgs({ set: ['crd.servedVersions={v1alpha1}'] }));
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /crd\.storageVersion v1beta1 must be one of crd\.servedVersions \[v1alpha1\]/);
      assert.match(r.stderr, /--set crd\.storageVersion=v1alpha1 --set crd\.servedVersions=\{v1alpha1\}/);
      const bad = await helm(templateArgs({ set: ['crd.servedVersions={v2}'] }));
      assert.match(bad.stderr, /crd\/servedVersions\/0/);
    });

    test('the DaemonSetSetting CRD: equal to src/api/crd.ts settingCrdObject(), kept on uninstall, no conversion', async () => {
      for (const mode of ['default', 'cert-manager'] as const) {
        const crd = find(await render({ valuesFiles: [ciValues(mode)] }), 'CustomResourceDefinition', SETTING_CRD);
        assert.deepEqual(crd.spec, (settingCrdObject() as unknown as Rendered).spec, mode);
        assert.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep', mode);
        // One version: nothing to convert, so no caBundle to inject.
        assert.equal(crd.metadata.annotations?.['cert-manager.io/inject-ca-from'], undefined, mode);
        assert.equal(crd.metadata.labels?.['app.kubernetes.io/managed-by'], 'Helm', mode);
      }
    });

    test('crd.create false renders no CRD', async () => {
      const objects = await render({ set: ['crd.create=false'] });
      assert.equal(objects.filter((o) => o.kind === 'CustomResourceDefinition').length, 0);
    });

    test('nothing is left in crds/, which Helm would never upgrade', async () => {
      const withCrds = await render({ extra: ['--include-crds'] });
      assert.deepEqual(
        withCrds
          .filter((o) => o.kind === 'CustomResourceDefinition')
          .map((o) => o.metadata.name)
          .sort(),
        [DAEMONSET_CRD, SETTING_CRD],
      );
    });

    test('an unknown storage version is refused by the schema', async () => {
      const r = await helm(templateArgs({ set: ['crd.storageVersion=v1'] }));
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /crd\/storageVersion/);
      assert.match(r.stderr, /'v1beta1', 'v1alpha1'/);
    });
  });

  describe('bad values are refused with a message naming the value', () => {
    const cases: { name: string; set: string[]; messages: RegExp[] }[] = [
      {
        name: 'an unknown certificate mode',
        set: ['certificates.mode=vault'],
        messages: [/certificates\/mode/, /'self-signed', 'cert-manager', 'external'/],
      },
      {
        name: 'a timeout above 30s',
        set: ['webhook.timeoutSeconds=60'],
        messages: [/webhook\/timeoutSeconds/, /maximum: got 60, want 30/],
      },
      { name: 'a misspelt key', set: ['webhook.timeout=5'], messages: [/additional properties 'timeout' not allowed/] },
      { name: 'zero replicas', set: ['replicas=0'], messages: [/\/replicas/, /minimum: got 0, want 1/] },
      { name: 'a log level typo', set: ['logLevel=verbose'], messages: [/logLevel/] },
      {
        name: 'a malformed duration',
        set: ['leaderElection.leaseDuration=15'],
        messages: [/leaderElection\/leaseDuration/],
      },
      { name: 'malformed feature gates', set: ['featureGates=Foo'], messages: [/featureGates/] },
      {
        name: 'a string where a number belongs',
        set: ['webhook.port=https'],
        messages: [/webhook\/port/, /want integer/],
      },
      {
        name: 'a bind address without a port',
        set: ['metrics.bindAddress=127.0.0.1'],
        messages: [/metrics\/bindAddress/],
      },
      {
        name: 'a NetworkPolicy selector that is not a label selector',
        set: ['networkPolicy.metrics.podSelector.app=x'],
        messages: [/networkPolicy\/metrics\/podSelector/],
      },
      {
        name: 'two replicas without leader election',
        set: ['leaderElection.enabled=false'],
        messages: [/leaderElection.enabled is false: every replica would reconcile/],
      },
      {
        name: 'a grace period shorter than the drain',
        set: ['terminationGracePeriodSeconds=10', 'webhook.drainSeconds=10'],
        messages: [/terminationGracePeriodSeconds \(10\) must be at least webhook.drainSeconds \(10\) \+ 5/],
      },
      {
        name: 'a rollout stuck threshold under a minute',
        set: ['prometheusRule.rolloutStuckSeconds=10'],
        messages: [/prometheusRule\/rolloutStuckSeconds/, /minimum: got 10, want 60/],
      },
      {
        name: 'an alert duration that is not a duration',
        set: ['prometheusRule.for.noLeader=5'],
        messages: [/prometheusRule\/for\/noLeader/],
      },
      {
        name: 'an unknown alert duration',
        set: ['prometheusRule.for.stuck=5m'],
        messages: [/additional properties 'stuck' not allowed/],
      },
      {
        name: 'external mode without a Secret',
        set: ['certificates.mode=external'],
        messages: [/set certificates.secretName to your Secret/],
      },
    ];
    for (const { name, set, messages } of cases) {
      test(name, async () => {
        const r = await helm(templateArgs({ set }));
        assert.notEqual(r.code, 0, `helm template --set ${set.join(',')} should fail`);
        for (const m of messages) assert.match(r.stderr, m);
      });
    }
  });
});
