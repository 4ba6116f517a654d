// The certificate modes of the chart (values certificates.mode) and of `manager --cert-mode`.
export const CERT_MODES = ['self-signed', 'cert-manager', 'external'] as const;
export type CertMode = (typeof CERT_MODES)[number];
