// Container image references as github.com/distribution/reference ParseNormalizedNamed reads them; used to
// default imagePullPolicy exactly as kube-apiserver does (pkg/util/parsers.ParseImageName).

const ALNUM = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[(?:[a-fA-F0-9:]+)\\])(?::[0-9]+)?`;
const NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE_RE = new RegExp(`^(${NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`);
const DIGEST_LENGTHS: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** Tag and digest of an image; `undefined` when the reference does not parse (upstream ignores the error). */
export function parseImageReference(image: string): { tag: string; digest: string } | undefined {
  if (/^[a-f0-9]{64}$/.test(image)) return undefined;
  const slash = image.indexOf('/');
  let domain = 'docker.io';
  let remainder = image;
  if (slash !== -1) {
    const first = image.slice(0, slash);
    if (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first) {
      domain = first;
      remainder = image.slice(slash + 1);
    }
  }
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !remainder.includes('/')) remainder = `library/${remainder}`;
  const colon = remainder.indexOf(':');
  const remoteName = colon === -1 ? remainder : remainder.slice(0, colon);
  if (remoteName.toLowerCase() !== remoteName) return undefined;
  const m = REFERENCE_RE.exec(`${domain}/${remainder}`);
  if (!m) return undefined;
  if ((m[1] ?? '').length > 255) return undefined;
  const digest = m[3] ?? '';
  if (digest) {
    const [algorithm = '', encoded = ''] = digest.split(':');
    if (DIGEST_LENGTHS[algorithm] !== encoded.length || !/^[a-f0-9]+$/.test(encoded)) return undefined;
  }
  return { tag: m[2] ?? '', digest };
}

/** SetDefaults_Container's imagePullPolicy: Always for `:latest` or no tag and no digest, else IfNotPresent. */
export function defaultImagePullPolicy(image: string): 'Always' | 'IfNotPresent' {
  const ref = parseImageReference(image);
  if (!ref) return 'IfNotPresent';
  const tag = ref.tag === '' && ref.digest === '' ? 'latest' : ref.tag;
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}
