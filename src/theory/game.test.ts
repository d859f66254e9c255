import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../util/errors.js';
import { createGame, gameFamilies, gameFamilyByName } from './families.js';
import { horizonOf, positionsOf, speakerAt, validateGameShape } from './game.js';
import { createSeededRandom } from './random.js';

const twoByTwo = { agentCount: 2, tokensPerTurn: 2, vocabularySize: 2, rounds: 2 };

test('positions follow the turn order, T tokens per turn, round after round', () => {
  assert.equal(horizonOf(twoByTwo), 8);
  assert.deepEqual(
    Array.from({ length: 8 }, (_, position) => speakerAt(twoByTwo, position)),
    [0, 0, 1, 1, 0, 0, 1, 1],
  );
  assert.deepEqual(positionsOf(twoByTwo, 1), [2, 3, 6, 7]);
});

test('shapes that cannot be enumerated or make no sense are rejected with what to change', () => {
  assert.throws(() => validateGameShape({ ...twoByTwo, vocabularySize: 1 }), ConfigError);
  assert.throws(() => validateGameShape({ ...twoByTwo, agentCount: 0 }), ConfigError);
  assert.throws(
    () => validateGameShape({ agentCount: 12, tokensPerTurn: 2, vocabularySize: 2, rounds: 1 }),
    /lower N, T, V or rounds/,
  );
  assert.throws(() => gameFamilyByName('poker'), /valid: random, dense, consensus, chain/);
});

test('consensus pays 1 exactly when every turn says the same word', () => {
  const shape = { agentCount: 3, tokensPerTurn: 1, vocabularySize: 2, rounds: 1 };
  const game = createGame(shape, gameFamilies.consensus!, createSeededRandom(0));
  // Transcripts 000 and 111 (indices 0 and 7) agree; no other does.
  assert.deepEqual([...game.rewards], [1, 0, 0, 0, 0, 0, 0, 1]);
});

test('chain counts turns that repeat the previous turn’s word', () => {
  const shape = { agentCount: 3, tokensPerTurn: 2, vocabularySize: 2, rounds: 1 };
  const game = createGame(shape, gameFamilies.chain!, createSeededRandom(0));
  const transcript = (words: number[]) => words.reduce((index, word) => index * 4 + word, 0);
  assert.equal(game.rewards[transcript([2, 2, 2])], 2);
  assert.equal(game.rewards[transcript([2, 2, 1])], 1);
  assert.equal(game.rewards[transcript([3, 1, 1])], 1);
  assert.equal(game.rewards[transcript([0, 1, 0])], 0);
});

test('dense rewards are the sum of per-turn rewards of the history up to each turn', () => {
  const shape = { agentCount: 2, tokensPerTurn: 1, vocabularySize: 2, rounds: 1 };
  const game = createGame(shape, gameFamilies.dense!, createSeededRandom(5));
  // The family draws turn 0's table (histories a) then turn 1's (histories a·b) in index order.
  const stream = createSeededRandom(5);
  const firstTurn = [stream.nextFloat(), stream.nextFloat()];
  const secondTurn = [
    stream.nextFloat(),
    stream.nextFloat(),
    stream.nextFloat(),
    stream.nextFloat(),
  ];
  for (let first = 0; first < 2; first++) {
    for (let second = 0; second < 2; second++) {
      const transcript = first * 2 + second;
      assert.equal(game.rewards[transcript], firstTurn[first]! + secondTurn[transcript]!);
    }
  }
});

test('random families are reproducible from the seed and structured ones ignore it', () => {
  const shape = { agentCount: 2, tokensPerTurn: 2, vocabularySize: 3, rounds: 1 };
  for (const family of Object.values(gameFamilies)) {
    const first = createGame(shape, family, createSeededRandom(1)).rewards;
    const again = createGame(shape, family, createSeededRandom(1)).rewards;
    assert.deepEqual(first, again);
    assert.equal(first.length, 3 ** 4);
  }
  const first = createGame(shape, gameFamilies.random!, createSeededRandom(1)).rewards;
  const second = createGame(shape, gameFamilies.random!, createSeededRandom(2)).rewards;
  assert.notDeepEqual(first, second);
});
