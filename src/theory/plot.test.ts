import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderLogLogPlot } from './plot.js';

const plot = {
  title: 'errors <& growth>',
  xLabel: 'N',
  yLabel: 'error',
  xTicks: [2, 4, 8],
  series: [
    {
      label: 'stale',
      color: '#c00',
      points: [
        { x: 2, y: 0.01, low: 0.009, high: 0.011 },
        { x: 4, y: 0.04 },
        { x: 8, y: 0.16 },
      ],
      fit: { slope: 2, intercept: Math.log(0.0025) },
    },
    {
      label: 'fresh',
      color: '#00c',
      dashed: true,
      points: [
        { x: 2, y: 0.001 },
        { x: 8, y: 0 },
      ],
      fit: null,
    },
  ],
};

test('the SVG has one marker per positive point, escaped text and a fit line', () => {
  const svg = renderLogLogPlot(plot);
  assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  assert.ok(svg.trimEnd().endsWith('</svg>'));
  assert.equal(svg.match(/<circle /g)!.length, 4);
  assert.ok(svg.includes('errors &lt;&amp; growth&gt;'));
  assert.equal(svg.match(/stroke-dasharray/g)!.length, 1);
  for (const decade of ['1e-3', '1e-2', '1e-1']) assert.ok(svg.includes(`>${decade}<`));
});

test('larger values sit higher and a power law with slope 2 is drawn through its points', () => {
  const svg = renderLogLogPlot(plot);
  const circles = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((match) => ({
    x: Number(match[1]),
    y: Number(match[2]),
  }));
  const [first, second, third] = circles;
  assert.ok(first!.x < second!.x && second!.x < third!.x);
  assert.ok(first!.y > second!.y && second!.y > third!.y);
  const line = svg.match(
    /<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" stroke="#c00" stroke-width/,
  )!;
  assert.ok(Math.abs(Number(line[2]) - first!.y) < 0.2);
  assert.ok(Math.abs(Number(line[4]) - third!.y) < 0.2);
});
