import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Figure, FigureSeries } from './figure.js';
import { escapeXml, renderSvgChart } from './svg.js';

function figure(series: FigureSeries[], extra: Partial<Figure> = {}): Figure {
  return {
    id: 'test',
    title: 'A test figure',
    description: '',
    xLabel: 'x label',
    yLabel: 'y label',
    series,
    notes: [],
    ...extra,
  };
}

/** Tags open and close in order (a small well-formedness check; no XML parser is installed). */
function assertBalanced(svg: string): void {
  const stack: string[] = [];
  for (const match of svg.matchAll(/<(\/?)([A-Za-z][\w:-]*)[^>]*?(\/?)>/g)) {
    const [, closing, name, selfClosing] = match;
    if (selfClosing) continue;
    if (closing) assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    else stack.push(name!);
  }
  assert.deepEqual(stack, [], 'unclosed elements');
}

function numbersOf(svg: string, element: string, attribute: string): number[] {
  return [...svg.matchAll(new RegExp(`<${element} [^>]*?${attribute}="([-0-9.]+)"`, 'g'))].map(
    (match) => Number(match[1]),
  );
}

const line: FigureSeries = {
  label: 'line',
  color: '#0072b2',
  style: 'line',
  points: [
    { x: 0, y: 1 },
    { x: 5, y: 3 },
    { x: 10, y: 2 },
  ],
};

describe('renderSvgChart', () => {
  test('writes a standalone, balanced SVG document with title, axis labels and legend', () => {
    const svg = renderSvgChart(figure([line]));
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="720" height="420"/);
    assertBalanced(svg);
    for (const text of ['A test figure', 'x label', 'y label', '>line<'])
      assert.ok(svg.includes(text), text);
    assert.ok(!svg.includes('NaN') && !svg.includes('undefined'));
  });

  test('a line is one path through its points, inside the plot frame', () => {
    const svg = renderSvgChart(figure([line]), { width: 600, height: 400 });
    const paths = [...svg.matchAll(/<path d="([^"]+)"/g)].map((match) => match[1]!);
    assert.equal(paths.length, 1);
    const coordinates = [...paths[0]!.matchAll(/[ML]([-0-9.]+),([-0-9.]+)/g)].map((match) => ({
      x: Number(match[1]),
      y: Number(match[2]),
    }));
    assert.equal(coordinates.length, 3);
    const frame = svg.match(
      /<rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" fill="none"/,
    )!;
    const [left, top, width, height] = frame.slice(1).map(Number);
    for (const point of coordinates) {
      assert.ok(point.x >= left! && point.x <= left! + width!, `x ${point.x}`);
      assert.ok(point.y >= top! && point.y <= top! + height!, `y ${point.y}`);
    }
    assert.ok(coordinates[1]!.y < coordinates[0]!.y, 'larger values are drawn higher');
  });

  test('points and markers are circles; non-finite points are skipped', () => {
    const points: FigureSeries = {
      label: 'p',
      color: '#e69f00',
      style: 'points',
      points: [
        { x: 1, y: 1 },
        { x: 2, y: Number.NaN },
        { x: 3, y: 2 },
      ],
    };
    const svg = renderSvgChart(figure([points, { ...line, markers: true }]));
    assert.equal(
      numbersOf(svg, 'circle', 'cx').length,
      2 + 3 + 1,
      'two points, three markers, one legend dot',
    );
    assert.ok(!svg.includes('NaN'));
  });

  test('grouped bars sit side by side per category and hang below zero for negative values', () => {
    const bars = (label: string, color: string, values: number[]): FigureSeries => ({
      label,
      color,
      style: 'bars',
      points: values.map((y, x) => ({ x, y })),
    });
    const svg = renderSvgChart(
      figure([bars('in', '#111111', [0.5, -0.2, 0.1]), bars('out', '#222222', [0.3, -0.4, 0])], {
        xCategories: ['1', '2', '3–5'],
      }),
    );
    const plotted = svg.slice(svg.indexOf('<g clip-path'), svg.indexOf('</g>'));
    const rects = [
      ...plotted.matchAll(
        /<rect x="([-0-9.]+)" y="([-0-9.]+)" width="([0-9.]+)" height="([0-9.]+)" fill="(#111111|#222222)"\/>/g,
      ),
    ].map((match) => ({
      x: Number(match[1]),
      top: Number(match[2]),
      bottom: Number(match[2]) + Number(match[4]),
      color: match[5],
    }));
    assert.equal(rects.length, 6);
    const first = rects.filter((rect) => rect.color === '#111111');
    const second = rects.filter((rect) => rect.color === '#222222');
    first.forEach((rect, index) =>
      assert.ok(
        second[index]!.x > rect.x,
        'the second series is right of the first in each category',
      ),
    );
    const zeroLine = svg.match(
      /<line x1="[0-9.]+" x2="[0-9.]+" y1="([0-9.]+)" y2="[0-9.]+" stroke="#9ca3af"/,
    );
    assert.ok(zeroLine, 'the zero grid line is drawn darker');
    const zero = Number(zeroLine[1]);
    assert.ok(Math.abs(first[0]!.bottom - zero) < 0.02, 'a positive bar stands on zero');
    assert.ok(
      Math.abs(first[1]!.top - zero) < 0.02 && first[1]!.bottom > zero,
      'a negative bar hangs from zero',
    );
    assert.ok(svg.includes('>3–5<'));
  });

  test('a figure without data says so instead of drawing axes', () => {
    const svg = renderSvgChart(figure([]));
    assert.ok(svg.includes('no data yet'));
    assert.ok(!svg.includes('<path') && !svg.includes('<circle'));
    assertBalanced(svg);
  });

  test('a constant series still gets a sensible axis', () => {
    const flat: FigureSeries = {
      label: 'zeros',
      color: '#0072b2',
      style: 'line',
      points: [
        { x: 0, y: 0 },
        { x: 1, y: 0 },
        { x: 2, y: 0 },
      ],
    };
    const svg = renderSvgChart(figure([flat]));
    assert.ok(!svg.includes('NaN') && !svg.includes('Infinity'));
    assert.ok(svg.includes('>0<'));
  });

  test('labels are escaped and clip paths are unique per figure', () => {
    const svg = renderSvgChart(
      figure([{ ...line, label: 'a<b & "c"' }], { id: 'weird id/1', title: '<script>' }),
    );
    assert.ok(svg.includes('a&lt;b &amp; &quot;c&quot;'));
    assert.ok(!svg.includes('<script>'));
    assert.ok(svg.includes('id="clip-weird-id-1"'));
    assert.equal(escapeXml(`'`), '&#39;');
  });

  test('a long legend wraps into rows without leaving the chart', () => {
    const many = Array.from({ length: 12 }, (_value, index): FigureSeries => ({
      ...line,
      label: `a fairly long series label ${index}`,
    }));
    const svg = renderSvgChart(figure(many), { width: 500, height: 600 });
    const legendX = [
      ...svg.matchAll(/<text x="([0-9.]+)" y="[0-9.]+" fill="#1f2937">a fairly long/g),
    ].map((match) => Number(match[1]));
    assert.equal(legendX.length, 12);
    assert.ok(legendX.every((x) => x + 'a fairly long series label 10'.length * 6.3 <= 500 + 1));
  });

  test('log-log axes: decade ticks fitted to the data, a power law drawn straight', () => {
    // The theory lab's plot: y = 0.0025·N² at N = 2, 4, 8 with a fitted line and a ±10% band.
    const measured: FigureSeries = {
      label: 'stale',
      color: '#0072b2',
      style: 'points',
      points: [2, 4, 8].map((x) => ({
        x,
        y: 0.0025 * x * x,
        low: 0.00225 * x * x,
        high: 0.00275 * x * x,
      })),
    };
    const fit: FigureSeries = {
      label: '',
      color: '#0072b2',
      style: 'line',
      points: [2, 8].map((x) => ({ x, y: 0.0025 * x * x })),
    };
    const svg = renderSvgChart(
      figure([measured, fit], { xScale: 'log', yScale: 'log', xTicks: [2, 4, 8] }),
    );
    assertBalanced(svg);
    for (const tick of ['>2<', '>4<', '>8<', '>0.01<', '>0.1<'])
      assert.ok(svg.includes(tick), tick);
    // Fitted to the data (0.009–0.176): no decade far outside it.
    assert.ok(!svg.includes('>0.001<') && !svg.includes('>1<'));
    const centers = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)" r="3.5"/g)].map(
      (match) => ({ x: Number(match[1]), y: Number(match[2]) }),
    );
    assert.equal(centers.length, 3);
    // Equal ratios are equal distances on both axes, so the three points are collinear.
    assert.ok(Math.abs(centers[1]!.x - centers[0]!.x - (centers[2]!.x - centers[1]!.x)) < 0.02);
    assert.ok(Math.abs(centers[0]!.y - centers[1]!.y - (centers[1]!.y - centers[2]!.y)) < 0.02);
    const line = svg.match(/<path d="M([\d.]+),([\d.]+)L([\d.]+),([\d.]+)" fill="none"/)!;
    assert.ok(Math.abs(Number(line[2]) - centers[0]!.y) < 0.02);
    assert.ok(Math.abs(Number(line[4]) - centers[2]!.y) < 0.02);
    // One legend entry: the fitted line has no label.
    assert.equal((svg.match(/>stale</g) ?? []).length, 1);
  });

  test('values that a log axis cannot show are left out, never drawn as NaN', () => {
    const series: FigureSeries = {
      label: 'with a zero',
      color: '#0072b2',
      style: 'points',
      points: [
        { x: 1, y: 0 },
        { x: 2, y: 0.5 },
        { x: 3, y: 2 },
      ],
    };
    const svg = renderSvgChart(figure([series], { yScale: 'log' }));
    assert.equal(numbersOf(svg, 'circle', 'cy').length, 2 + 1, 'two points and the legend dot');
    assert.ok(!svg.includes('NaN') && !svg.includes('Infinity'));
  });

  test('an interval is a shaded band in the series colour, with its own legend entry', () => {
    const banded: FigureSeries = {
      ...line,
      bandLabel: 'seed band',
      points: line.points.map((point) => ({ ...point, low: point.y - 0.5, high: point.y + 0.5 })),
    };
    const svg = renderSvgChart(figure([banded]));
    const bands = [...svg.matchAll(/<path d="M([^"]+)Z" fill="#0072b2" fill-opacity="0.2"/g)];
    assert.equal(bands.length, 1);
    assert.equal(bands[0]![1]!.split('L').length, 6, 'three highs, then three lows back');
    assert.ok(!svg.includes('stroke-dasharray'), 'no dashed lines for the interval');
    assert.ok(svg.includes('>seed band<'));
    // The axis makes room for the band: its ticks reach 3.5 (the line alone peaks at 3).
    const yTicks = [...svg.matchAll(/text-anchor="end" fill="#6b7280">([^<]+)</g)].map((match) =>
      Number(match[1]),
    );
    assert.ok(Math.max(...yTicks) >= 3.5 && Math.min(...yTicks) <= 0.5, yTicks.join(' '));
  });

  test('the caption (the takeaway) is wrapped under the legend and adds to the height', () => {
    const description = 'teamtr ends at 22.4% and sequential-stale at 29.8%: '.repeat(6).trim();
    const plain = renderSvgChart(figure([line], { description }));
    const captioned = renderSvgChart(figure([line], { description }), { caption: true });
    assert.ok(!plain.includes('teamtr ends at'));
    const lines = [...captioned.matchAll(/<text x="12" y="[0-9.]+" fill="#1f2937">([^<]+)</g)];
    assert.ok(lines.length >= 3, `${lines.length} caption lines`);
    assert.ok(lines.every((match) => match[1]!.length * 6.3 <= 720 - 24));
    assert.equal(lines.map((match) => match[1]).join(' '), description);
    const height = (svg: string) => Number(svg.match(/height="(\d+)"/)![1]);
    assert.equal(height(captioned), height(plain) + lines.length * 16 + 8);
    assertBalanced(captioned);
  });
});
