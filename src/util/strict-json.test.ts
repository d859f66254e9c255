import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseStrictJson } from './strict-json.js';

describe('parseStrictJson', () => {
  test('parses what JSON.parse parses when no object repeats a key', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value, null, 1);
        assert.deepEqual(parseStrictJson(text, 'x.json'), JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  test('a repeated key is refused with its path and both lines', () => {
    const text = '{\n "seed": 1,\n "rollout": {"groupSize": 4},\n "seed": 2\n}';
    assert.throws(
      () => parseStrictJson(text, 'team.json'),
      /team\.json: the key "seed" appears twice \(on lines 2 and 4\); keep one/,
    );
    assert.throws(
      () => parseStrictJson('{"agents": [{"model": "a"}, {"model": "b", "model": "c"}]}', 'c.json'),
      /the key "agents\[1\]\.model" appears twice/,
    );
    assert.throws(
      () => parseStrictJson('{"a": {"b": 1, "\\u0062": 2}}', 'c.json'),
      /the key "a\.b" appears twice/,
      'keys are compared after unescaping',
    );
  });

  test('the same key in sibling objects, and key-like strings in values, are fine', () => {
    assert.deepEqual(parseStrictJson('[{"a": 1}, {"a": 2}]', 'x'), [{ a: 1 }, { a: 2 }]);
    assert.deepEqual(parseStrictJson('{"a": "a", "b": ["a", "a:"], "c": {"a": 1}}', 'x'), {
      a: 'a',
      b: ['a', 'a:'],
      c: { a: 1 },
    });
    assert.deepEqual(parseStrictJson('{"a\\"": 1, "a": 2}', 'x'), { 'a"': 1, a: 2 });
  });

  test('invalid JSON names the file', () => {
    assert.throws(() => parseStrictJson('{"a": }', 'bad.json'), /bad\.json: is not valid JSON/);
  });
});
