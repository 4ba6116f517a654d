// The child process that makes one certificate for the manager (issuer.ts says why): it takes one request on its IPC
// channel, answers, and exits, and with it goes @peculiar/x509. The production build bundles it beside dist/main.mjs
// as certs-issuer.mjs (hack/bundle.ts).
import { IN_PROCESS_ISSUER, type IssueReply, type IssueRequest } from './issuer.ts';

async function answer(request: IssueRequest): Promise<IssueReply> {
  try {
    const value =
      request.fn === 'issueMaterial'
        ? await IN_PROCESS_ISSUER.issueMaterial(...request.args)
        : await IN_PROCESS_ISSUER.newServingCertificate(...request.args);
    return { value };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

process.once('message', (request) => {
  void answer(request as IssueRequest).then((reply) =>
    process.send?.(reply, undefined, {}, () => process.disconnect()),
  );
});
