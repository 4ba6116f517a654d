// Field paths: the text of a chain is upstream's field.Path.String(), whichever link of it is asked first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { path, FieldPath } from './field.ts';

test('a path prints as field.Path.String(): dotted names, [i] and [key] subscripts', () => {
  const rows: { p: FieldPath; want: string }[] = [
    { p: path('spec'), want: 'spec' },
    { p: path('spec', 'template', 'spec'), want: 'spec.template.spec' },
    {
      p: path('spec').child('containers').index(0).child('resources', 'limits').key('cpu'),
      want: 'spec.containers[0].resources.limits[cpu]',
    },
    { p: path('metadata').child('labels').key('a.b/c'), want: 'metadata.labels[a.b/c]' },
    { p: FieldPath.root('').child('x'), want: '.x' },
    { p: FieldPath.root('oldObject').index(3).index(4), want: 'oldObject[3][4]' },
    { p: path('spec').child(), want: 'spec' },
  ];
  for (const { p, want } of rows) {
    assert.equal(p.toString(), want);
    assert.equal(`${p}`, want, 'again, from the text kept');
  }
});

test('a link asked before or after its children prints the same', () => {
  const parent = path('spec', 'template');
  const child = parent.child('spec').index(2);
  assert.equal(child.toString(), 'spec.template.spec[2]');
  assert.equal(parent.toString(), 'spec.template');
  const other = parent.child('metadata').key('k');
  assert.equal(other.toString(), 'spec.template.metadata[k]');
});
