// Decodes the apiserver's JSON responses from their bytes as they arrive.
//
// ListItemDecoder: a list response (`{"kind":"PodList",...,"items":[{...},{...}]}`) item by item, so an informer's
// transform runs on each object before the next is decoded: the full objects of a list are never all in memory at
// once, nor is the body. A list at resourceVersion "0" comes from the apiserver's watch cache in one response
// whatever the page size (5,000 pods with their managedFields are about 25 MB of JSON, several times that once
// parsed), so decoding it whole and trimming afterwards would cost more at the peak than the trimmed cache itself.
// The same idea as client-go's streaming list decoding and its watch-list
// (https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/3157-watch-list). Only the structure
// is scanned (braces, brackets, strings, the top-level key "items"); each item's bytes then go to JSON.parse, and
// everything outside the items (kind, apiVersion, metadata with resourceVersion and continue) is parsed once at the
// end. UTF-8 needs no care: no byte of a multi-byte sequence is an ASCII structural byte.
//
// JsonLinesDecoder: a watch response, one event per line.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
const NEWLINE = 0x0a;

/** Whitespace JSON allows between tokens. */
function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** How many backslashes directly precede `end`, not looking before `start`. */
function backslashesBefore(chunk: Buffer, end: number, start: number): number {
  let k = end - 1;
  while (k >= start && chunk[k] === BACKSLASH) k--;
  return end - 1 - k;
}

export class ListDecodeError extends Error {
  constructor(message: string) {
    super(`list response: ${message}`);
    this.name = 'ListDecodeError';
  }
}

/**
 * Feed it the body's chunks with `write`, then call `end`: each element of the top-level `items` array is parsed
 * and handed to `onItem` as soon as its last byte arrived; `end` returns the rest of the list (its `items` empty).
 */
export class ListItemDecoder {
  private depth = 0;
  private inString = false;
  /** The previous byte inside a string was an unescaped backslash. */
  private escaped = false;
  /** At depth 1, the next string is a key. */
  private expectKey = false;
  private capturingKey = false;
  private key = '';
  private lastKey = '';
  /** Inside the items array (its elements are not copied to the skeleton). */
  private inItems = false;
  /** Pieces of the item being read (it may span chunks). */
  private itemPieces: Buffer[] = [];
  private inItem = false;
  /** Everything outside the items' elements: parsed at the end. */
  private readonly skeleton: Buffer[] = [];
  private items = 0;

  constructor(private readonly onItem: (item: unknown) => void) {}

  /** How many items were handed over. */
  get count(): number {
    return this.items;
  }

  write(chunk: Buffer): void {
    const n = chunk.length;
    /** Where the current run of bytes to copy (skeleton or item) started in this chunk. */
    let runStart = 0;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        if (this.capturingKey) {
          // Keys are short: byte by byte, kept.
          const b = chunk[i] as number;
          if (this.escaped) this.escaped = false;
          else if (b === BACKSLASH) this.escaped = true;
          else if (b === QUOTE) {
            this.inString = false;
            this.capturingKey = false;
            this.lastKey = this.key;
          }
          if (this.capturingKey) this.key += String.fromCharCode(b);
          i++;
          continue;
        }
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        // Jump to the closing quote: most bytes of a Kubernetes object are inside strings. A quote after an odd
        // run of backslashes is escaped.
        let q = chunk.indexOf(QUOTE, i);
        while (q >= 0 && backslashesBefore(chunk, q, i) % 2 === 1) q = chunk.indexOf(QUOTE, q + 1);
        if (q < 0) {
          // The string goes on in the next chunk; an odd run of backslashes at the end escapes its first byte.
          this.escaped = backslashesBefore(chunk, n, i) % 2 === 1;
          i = n;
          break;
        }
        this.inString = false;
        i = q + 1;
        continue;
      }
      const b = chunk[i] as number;
      switch (b) {
        case QUOTE:
          if (this.inItems && this.depth === 2) throw new ListDecodeError('an item is not an object');
          this.inString = true;
          if (this.depth === 1 && this.expectKey) {
            this.capturingKey = true;
            this.key = '';
          }
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          if (this.inItems && this.depth === 2) {
            if (b !== OPEN_BRACE) throw new ListDecodeError('an item is not an object');
            // An item starts: close the skeleton run before it (nothing of the items array is copied).
            this.inItem = true;
            runStart = i;
          }
          this.depth++;
          if (this.depth === 1) this.expectKey = true;
          if (this.depth === 2 && b === OPEN_BRACKET && this.lastKey === 'items' && !this.inItems) {
            // The items array: copy its "[" and nothing more until its "]".
            this.inItems = true;
            this.skeleton.push(chunk.subarray(runStart, i + 1));
            runStart = i + 1;
          }
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          this.depth--;
          if (this.depth < 0) throw new ListDecodeError('unbalanced brackets');
          if (this.inItems && this.depth === 2 && this.inItem) {
            this.itemPieces.push(chunk.subarray(runStart, i + 1));
            this.emitItem();
            runStart = i + 1;
          } else if (this.inItems && this.depth === 1) {
            // The items array's "]": copying resumes with it.
            this.inItems = false;
            runStart = i;
          }
          break;
        case COMMA:
          if (this.depth === 1) this.expectKey = true;
          break;
        case COLON:
          if (this.depth === 1) this.expectKey = false;
          break;
        default:
          if (this.inItems && this.depth === 2 && !isSpace(b)) throw new ListDecodeError('an item is not an object');
      }
      // Bytes between items (commas, spaces) are dropped: restart the run after them.
      if (this.inItems && this.depth === 2 && !this.inItem) runStart = i + 1;
      i++;
    }
    // The chunk's tail: part of an item, or of the skeleton.
    if (runStart < n) {
      if (this.inItem) this.itemPieces.push(chunk.subarray(runStart, n));
      else if (!this.inItems) this.skeleton.push(chunk.subarray(runStart, n));
    }
  }

  /** The list without its items (they went to onItem). Throws when the body ended early. */
  end(): { [key: string]: unknown } {
    if (this.depth !== 0 || this.inString || this.inItem) throw new ListDecodeError('the body ended inside the list');
    const text = Buffer.concat(this.skeleton).toString('utf8');
    if (!text.trim()) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ListDecodeError(`not JSON: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new ListDecodeError('not a JSON object');
    return parsed as { [key: string]: unknown };
  }

  private emitItem(): void {
    const pieces = this.itemPieces;
    this.itemPieces = [];
    this.inItem = false;
    const bytes = pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces);
    let item: unknown;
    try {
      item = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new ListDecodeError(`item ${this.items} is not JSON: ${(err as Error).message}`);
    }
    this.items++;
    this.onItem(item);
  }
}

/**
 * Splits a watch response (one JSON event per line, https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes)
 * into its events from the body's bytes. Decoding events is about a quarter of what the manager allocates through
 * a rollout (bench/README.md, section 6). The usual way, a string decoder and a growing text buffer (setEncoding,
 * `+=`, `indexOf`, `slice`), adds to each event's text a string of every chunk and a copy of the buffered text each
 * time it is searched; here each event's text is made once, from its own bytes. Line-splitting libraries on npm
 * work on strings the same way, hence this. UTF-8 needs no care: a newline byte is never part of a multi-byte
 * sequence.
 */
export class JsonLinesDecoder {
  /** Bytes of the line not yet ended (it may span chunks). */
  private pieces: Buffer[] = [];

  /**
   * Hands each line `chunk` ends (with what earlier chunks left of it) to `onValue`, parsed; blank lines are
   * skipped, and the bytes after the last newline are kept for the next chunk. Returning false from `onValue`
   * stops at once (the rest is dropped). A line that is not JSON throws JSON.parse's SyntaxError.
   */
  write(chunk: Buffer, onValue: (value: unknown) => boolean): void {
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(NEWLINE, start)) >= 0) {
      let more: boolean;
      if (this.pieces.length === 0) more = parseLine(chunk, start, nl, onValue);
      else {
        this.pieces.push(chunk.subarray(start, nl));
        const line = Buffer.concat(this.pieces);
        this.pieces = [];
        more = parseLine(line, 0, line.length, onValue);
      }
      if (!more) return;
      start = nl + 1;
    }
    if (start < chunk.length) this.pieces.push(start === 0 ? chunk : chunk.subarray(start));
  }
}

/** Parses bytes [start, end) of `buf` unless they are blank; false when `onValue` says to stop. */
function parseLine(buf: Buffer, start: number, end: number, onValue: (value: unknown) => boolean): boolean {
  while (start < end && isSpace(buf[start] as number)) start++;
  if (start === end) return true;
  return onValue(JSON.parse(buf.toString('utf8', start, end)));
}
