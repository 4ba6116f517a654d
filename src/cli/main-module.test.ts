import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainModule } from './main-module.ts';

test('isMainModule: the started script, through a symlink too; another module or none is not', (t) => {
  const saved = process.argv[1];
  t.after(() => (process.argv[1] = saved as string));
  const self = import.meta.filename;
  const dir = mkdtempSync(join(tmpdir(), 'main-module-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const link = join(dir, 'link.ts');
  symlinkSync(self, link);
  const rows: [string | undefined, boolean][] = [
    [self, true],
    [link, true],
    [join(import.meta.dirname, 'heap.ts'), false],
    ['/no/such/file.ts', false],
    [undefined, false],
  ];
  for (const [argv1, want] of rows) {
    process.argv[1] = argv1 as string;
    assert.equal(isMainModule(pathToFileURL(self).href), want, String(argv1));
  }
});
