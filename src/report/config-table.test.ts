import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configTable, flattenConfig } from './config-table.js';

test('flattenConfig lists leaves by dotted path, arrays of objects by index', () => {
  const leaves = flattenConfig({
    seed: 1,
    trustRegion: { delta: 0.01 },
    agents: [{ name: 'a' }],
    turnOrder: [0, 1],
    empty: {},
    note: 'x',
  });
  assert.deepEqual(Object.fromEntries(leaves), {
    seed: '1',
    'trustRegion.delta': '0.01',
    'agents[0].name': 'a',
    turnOrder: '[0,1]',
    empty: '{}',
    note: 'x',
  });
});

test('configTable marks the settings that differ between runs, and the missing ones', () => {
  const rows = configTable([
    { seed: 0, schedule: 'teamtr', budget: { generatedTokens: 100 } },
    { seed: 1, schedule: 'teamtr' },
  ]);
  assert.deepEqual(rows, [
    { key: 'seed', values: ['0', '1'], differs: true },
    { key: 'schedule', values: ['teamtr', 'teamtr'], differs: false },
    { key: 'budget.generatedTokens', values: ['100', null], differs: true },
  ]);
  assert.deepEqual(configTable([null]), []);
});
