import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { gridWallSeconds, type GridCell } from './scaling-grid.js';

const directory = mkdtempSync(path.join(tmpdir(), 'teamtr-scaling-grid-'));
after(() => rmSync(directory, { recursive: true, force: true }));

function cell(name: string, wallSeconds: number | null): GridCell {
  const cellDirectory = path.join(directory, name);
  mkdirSync(cellDirectory, { recursive: true });
  if (wallSeconds !== null)
    writeFileSync(path.join(cellDirectory, 'summary.json'), JSON.stringify({ wallSeconds }));
  return { agents: 2, schedule: 'teamtr', seed: 0, directory: cellDirectory, config: {} };
}

test("the grid's wall time counts a run trained now once, a reused run's and a resumed run's earlier part", () => {
  const cells = [
    cell('ran-now', 40), // trained by this command: already inside its 100 s
    cell('reused', 30), // finished by an earlier command
    cell('resumed', 50), // 20 s earlier, 30 s now
    cell('missing', null),
  ];
  assert.equal(gridWallSeconds(cells, [41, 0, 30, 0], 100), 100 + 30 + 20);
});
