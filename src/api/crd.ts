// The CustomResourceDefinition of apps.kruise.io/v1alpha1 DaemonSet, built from the one schema in schema.ts.
// gen-crd.ts writes it to the chart; the e2e suite applies crdObject() directly.
import { API_GROUP, KIND, LIST_KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from './constants.ts';
import { DaemonSetSchema } from './schema.ts';

/** Keys TypeBox may leave that a CRD schema does not accept. Symbol keys ([Kind] etc.) vanish in the JSON round trip. */
const TYPEBOX_ONLY_KEYS = new Set(['$id', '$schema', 'static', 'params']);

function stripTypeBoxKeys(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(stripTypeBoxKeys);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (TYPEBOX_ONLY_KEYS.has(k)) continue;
    // `properties` maps field names to schemas: recurse into values, keep every name.
    out[k] = stripTypeBoxKeys(v);
  }
  return out;
}

/** The structural openAPIV3Schema of the CRD version. */
export function openAPIV3Schema(): Record<string, unknown> {
  const schema = stripTypeBoxKeys(JSON.parse(JSON.stringify(DaemonSetSchema))) as Record<string, unknown>;
  // metadata is always present and validated by the apiserver; listing it as required is noise.
  const requiredRoot = (schema.required as string[] | undefined)?.filter((k) => k !== 'metadata');
  if (requiredRoot?.length) schema.required = requiredRoot;
  else delete schema.required;
  return schema;
}

const printerColumns = [
  { name: 'DESIRED', type: 'integer', jsonPath: '.status.desiredNumberScheduled', description: 'The desired number of pods.' },
  { name: 'CURRENT', type: 'integer', jsonPath: '.status.currentNumberScheduled', description: 'The current number of pods.' },
  { name: 'READY', type: 'integer', jsonPath: '.status.numberReady', description: 'The ready number of pods.' },
  { name: 'UP-TO-DATE', type: 'integer', jsonPath: '.status.updatedNumberScheduled', description: 'The updated number of pods.' },
  { name: 'AVAILABLE', type: 'integer', jsonPath: '.status.numberAvailable', description: 'The available number of pods.' },
  { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since the DaemonSet was created.' },
  { name: 'CONTAINERS', type: 'string', priority: 1, jsonPath: '.spec.template.spec.containers[*].name', description: 'The containers of the pod template.' },
  { name: 'IMAGES', type: 'string', priority: 1, jsonPath: '.spec.template.spec.containers[*].image', description: 'The images of the pod template.' },
]; // prettier-ignore

/** The CRD as a plain object, ready to apply. */
export function crdObject(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${API_GROUP}` },
    spec: {
      group: API_GROUP,
      names: { kind: KIND, listKind: LIST_KIND, plural: PLURAL, singular: SINGULAR, shortNames: [...SHORT_NAMES] },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: openAPIV3Schema() },
          subresources: { status: {} },
          additionalPrinterColumns: printerColumns,
        },
      ],
    },
  };
}
