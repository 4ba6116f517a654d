// The README's (and the chart README's) code blocks as a test sees them. A shell block says how a test treats it in an HTML comment on the
// line right before its fence (GitHub does not render the comment), as projects that test their docs mark their
// snippets (e.g. the Kubernetes website's and Rust's doctests: run, ignore with a reason):
//
//   <!-- snippet: run -->                  run, in document order, in the local cluster session of e2e/docs/readme.e2e.ts
//   <!-- snippet: run on-real-node -->     run by e2e/realnode/real-node.e2e.ts on its cluster with a real node
//   <!-- snippet: start ready=CMD -->      run in the background (a server); the next block waits until CMD succeeds
//   <!-- snippet: save FILE -->            (any block) written to FILE in the session's directory
//   <!-- snippet: skip REASON -->          not run; REASON says why and what tests it instead
//
// Every `sh` block must carry one, so a command added to the README is either run or says why it is not.

export type SnippetMode = 'run' | 'start' | 'save' | 'skip';

/** The documents whose blocks are checked, in the order a session runs them (the README's first, the chart's last). */
export const SNIPPET_DOCUMENTS = [
  'README.md',
  'docs/manager.md',
  'docs/plugin.md',
  'docs/api.md',
  'docs/dashboard.md',
  'docs/rollout-strategies.md',
  'bench/README.md',
  'charts/advanced-daemonset/README.md',
] as const;

export interface Snippet {
  /** The document, relative to the repository's root (set by the caller). */
  file?: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string, e.g. "sh", "yaml", "console". */
  lang: string;
  text: string;
  mode?: SnippetMode;
  /** run: where ("local", the kwok session; "real-node"). */
  where?: 'local' | 'real-node';
  /** start: the command that succeeds once the background block is ready. */
  ready?: string;
  /** save: the file name; skip: the reason. */
  arg?: string;
}

const MARKER = /^<!--\s*snippet:\s*(run|start|save|skip)\b\s*(.*?)\s*-->$/;
const FENCE = /^(\s*)(`{3,})\s*([\w-]*)/;

/** The fenced code blocks of a Markdown text, each with the marker right before it, if any. */
export function parseSnippets(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const out: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, ticks, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const l = lines[j]!;
      if (l.trim().startsWith(ticks!) && l.trim().replace(/`/g, '') === '') break;
      // An indented block (inside a list item) is indented as its fence is.
      body.push(l.startsWith(indent!) ? l.slice(indent!.length) : l);
    }
    const snippet: Snippet = { line: i + 1, lang: lang ?? '', text: body.join('\n') };
    const marker = i > 0 ? MARKER.exec(lines[i - 1]!.trim()) : null;
    if (marker) Object.assign(snippet, parseMarker(marker[1] as SnippetMode, marker[2]!, i));
    out.push(snippet);
    i = j;
  }
  return out;
}

function parseMarker(mode: SnippetMode, rest: string, index: number): Partial<Snippet> {
  switch (mode) {
    case 'run':
      if (rest !== '' && rest !== 'on-real-node')
        throw new Error(`line ${index}: "snippet: run" takes only on-real-node`);
      return { mode, where: rest === 'on-real-node' ? 'real-node' : 'local' };
    case 'start': {
      const ready = /^ready=(.+)$/.exec(rest)?.[1];
      if (!ready) throw new Error(`line ${index}: "snippet: start" needs ready=CMD`);
      return { mode, where: 'local', ready };
    }
    case 'save':
    case 'skip':
      if (!rest)
        throw new Error(`line ${index}: "snippet: ${mode}" needs ${mode === 'save' ? 'a file name' : 'a reason'}`);
      return { mode, arg: rest };
  }
}

/** Every block of SNIPPET_DOCUMENTS, in order, each with its file; `read` gives a document's text. */
export function documentSnippets(read: (file: string) => string): Snippet[] {
  return SNIPPET_DOCUMENTS.flatMap((file) => parseSnippets(read(file)).map((s) => ({ ...s, file })));
}

/** The blocks a session at `where` acts on, in document order (run, start and save). */
export function sessionSnippets(snippets: Snippet[], where: 'local' | 'real-node'): Snippet[] {
  return snippets.filter((s) =>
    (s.mode === 'run' || s.mode === 'start') && s.where === where ? true : s.mode === 'save' && where === 'local',
  );
}

/** The shell blocks without a marker: each is a command a reader may type that no test runs or explains. */
export function unmarkedShellBlocks(snippets: Snippet[]): Snippet[] {
  return snippets.filter((s) => (s.lang === 'sh' || s.lang === 'bash' || s.lang === 'shell') && !s.mode);
}
