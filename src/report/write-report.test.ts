import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { figureIds } from './figures.js';
import { externalReferences } from './test-support/external-references.js';
import { writeSyntheticRun } from './test-support/synthetic-run.js';
import { writeReport } from './write-report.js';

describe('writeReport', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'teamtr-report-'));
  const compare = path.join(scratch, 'compare');

  before(async () => {
    await writeSyntheticRun(path.join(compare, 'teamtr-seed0'), { seed: 0 });
    await writeSyntheticRun(path.join(compare, 'sequential-stale-seed0'), {
      schedule: 'sequential-stale',
      running: true,
    });
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test('writes one SVG per figure and an HTML page that inlines them all and loads nothing', async () => {
    const output = path.join(scratch, 'out');
    const result = await writeReport({ runDirectories: [compare], outputDirectory: output });
    assert.equal(result.htmlPath, path.join(output, 'index.html'));
    assert.deepEqual(
      result.figures.map((figure) => figure.id),
      [...figureIds],
    );
    const html = readFileSync(result.htmlPath, 'utf8');
    for (const figure of result.figures) {
      const svg = readFileSync(figure.path, 'utf8');
      assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      assert.ok(html.includes(svg.trim()), `${figure.id} is inlined`);
      assert.ok(figure.hasData, `${figure.id} has data in this run`);
    }
    assert.deepEqual(externalReferences(html), []);
    assert.ok(
      html.includes('sequential-stale-seed0') &&
        html.includes('>running<') &&
        html.includes('>finished<'),
    );
    assert.ok(html.includes('class="differs"'), 'differing settings are marked');
  });

  test('the figures of a run without records say there is no data yet', async () => {
    const fresh = path.join(scratch, 'fresh');
    const { run } = await writeSyntheticRun(fresh, { stages: 1, running: true });
    rmSync(run.metricsPath);
    const result = await writeReport({ runDirectories: [fresh] });
    assert.equal(result.htmlPath, path.join(fresh, 'report', 'index.html'));
    assert.ok(result.figures.every((figure) => !figure.hasData));
    assert.ok(readFileSync(result.figures[0]!.path, 'utf8').includes('no data yet'));
  });

  test('is deterministic: the same runs give the same bytes', async () => {
    const first = await writeReport({
      runDirectories: [compare],
      outputDirectory: path.join(scratch, 'a'),
    });
    const second = await writeReport({
      runDirectories: [compare],
      outputDirectory: path.join(scratch, 'b'),
    });
    assert.equal(readFileSync(first.htmlPath, 'utf8'), readFileSync(second.htmlPath, 'utf8'));
    assert.ok(existsSync(path.join(scratch, 'a', 'figures', 'kl.svg')));
  });
});
