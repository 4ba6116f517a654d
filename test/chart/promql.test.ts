// Table tests of the PromQL reading behind the chart's metric checks (promql.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  dashboardQueries,
  grafanaToPromQL,
  isExported,
  metricNames,
  variableQueryPromQL,
  type Exposition,
} from './promql.ts';

describe('metricNames', () => {
  const cases: { name: string; expr: string; want: string[] }[] = [
    { name: 'a bare selector', expr: 'up', want: ['up'] },
    {
      name: 'both sides of a binary operation with matching',
      expr: 'a{x="1"} > on (namespace, daemonset) b and on (namespace) c == 0',
      want: ['a', 'b', 'c'],
    },
    {
      name: 'inside functions, ranges and aggregations',
      expr: 'histogram_quantile(0.99, sum by (le) (rate(h_bucket{job=~".*"}[5m])))',
      want: ['h_bucket'],
    },
    { name: 'absent over a comparison', expr: 'absent(m{name="lease"} == 1)', want: ['m'] },
    { name: 'a __name__ matcher', expr: '{__name__="n", a="b"}', want: ['n'] },
    { name: 'a quoted UTF-8 name', expr: '{"my.metric", a="b"}', want: ['my.metric'] },
    { name: 'subquery and offset', expr: 'max_over_time(rate(c_total[1m])[10m:1m] offset 5m)', want: ['c_total'] },
    { name: 'the same metric twice counts once', expr: 'x - x offset 1h', want: ['x'] },
    { name: 'a number alone reads no metric', expr: '1 + 2', want: [] },
  ];
  for (const c of cases) test(c.name, () => assert.deepEqual(metricNames(c.expr), c.want));

  const errors: { name: string; expr: string; message: RegExp }[] = [
    { name: 'an unclosed matcher', expr: 'foo{', message: /syntax error at offset/ },
    { name: 'a Grafana variable where a duration goes', expr: 'rate(a[$__rate_interval])', message: /syntax error/ },
    { name: 'a trailing operator', expr: 'a >', message: /syntax error/ },
    { name: 'a regex on __name__', expr: '{__name__=~"a|b"}', message: /cannot tell which metric/ },
  ];
  for (const c of errors) test(`refuses ${c.name}`, () => assert.throws(() => metricNames(c.expr), c.message));
});

describe('Grafana queries as PromQL', () => {
  const cases: { name: string; query: string; want: string | undefined }[] = [
    { name: '$__rate_interval', query: 'rate(a[$__rate_interval])', want: 'rate(a[5m])' },
    { name: '${__interval}', query: 'rate(a[${__interval}])', want: 'rate(a[5m])' },
    { name: 'variables inside matcher strings stay', query: 'a{ns=~"$namespace"}', want: 'a{ns=~"$namespace"}' },
  ];
  for (const c of cases) test(c.name, () => assert.equal(grafanaToPromQL(c.query), c.want));

  const variables: { name: string; query: string; want: string | undefined }[] = [
    { name: 'label_values(selector, label)', query: 'label_values(m{a=~"$x"}, ns)', want: 'm{a=~"$x"}' },
    { name: 'label_values(label) reads no metric', query: 'label_values(job)', want: undefined },
    { name: 'query_result(expr)', query: 'query_result(sum(m))', want: 'sum(m)' },
  ];
  for (const c of variables) test(c.name, () => assert.equal(variableQueryPromQL(c.query), c.want));

  test('dashboardQueries visits row panels and query variables only', () => {
    const q = dashboardQueries({
      title: 't',
      panels: [
        { title: 'top', targets: [{ expr: 'a', refId: 'A' }] },
        { title: 'row', panels: [{ title: 'inner', targets: [{ expr: 'rate(b[$__rate_interval])', refId: 'B' }] }] },
      ],
      templating: {
        list: [
          { name: 'ds', type: 'datasource', query: 'prometheus' },
          { name: 'ns', type: 'query', query: { query: 'label_values(c, namespace)' } },
        ],
      },
    });
    assert.deepEqual(q, [
      { where: 'panel "top" A', expr: 'a' },
      { where: 'panel "inner" B', expr: 'rate(b[5m])' },
      { where: 'variable $ns', expr: 'c' },
    ]);
  });
});

describe('isExported', () => {
  const e: Exposition = {
    sampleNames: new Set(['g', 'h_bucket', 'h_sum', 'h_count']),
    types: new Map([
      ['g', 'gauge'],
      ['h', 'histogram'],
      ['empty_h', 'histogram'],
      ['s', 'summary'],
      ['c_total', 'counter'],
    ]),
  };
  const cases: { name: string; metric: string; want: boolean }[] = [
    { name: 'a sample', metric: 'g', want: true },
    { name: 'a family without samples yet', metric: 'c_total', want: true },
    { name: 'a histogram bucket', metric: 'h_bucket', want: true },
    { name: 'a histogram with no observation yet: _bucket', metric: 'empty_h_bucket', want: true },
    { name: 'a histogram with no observation yet: _count', metric: 'empty_h_count', want: true },
    { name: 'a summary has no buckets', metric: 's_bucket', want: false },
    { name: 'a summary _sum', metric: 's_sum', want: true },
    { name: 'a gauge has no _count', metric: 'g_count', want: false },
    { name: 'an unknown metric', metric: 'nope', want: false },
  ];
  for (const c of cases) test(c.name, () => assert.equal(isExported(c.metric, e), c.want));
});
