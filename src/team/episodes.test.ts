import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generatedTokenCount, playEpisodes, type DrawnToken } from './episodes.js';
import { tinyTeam } from './test-support/tiny-team.js';

describe('playEpisodes (the path both the trainer and a server play the team by)', () => {
  const team = tinyTeam();
  team.protocol.maxTurnTokens = 6;
  const base = { team, prompts: ['ab', 'ba'], groupSize: 3, seed: 'play' };

  test('a bound on the episode bounds all its turns together, and cuts the turn that reaches it', async () => {
    const free = await playEpisodes(base);
    const bounded = await playEpisodes({ ...base, maxEpisodeTokens: 7 });
    let ended = 0;
    bounded.episodes.forEach((episode, index) => {
      const whole = free.episodes[index]!;
      const spent = episode.turns.reduce((total, turn) => total + generatedTokenCount(turn), 0);
      assert.ok(spent <= 7);
      // The same random streams: each played turn is a prefix of the unbounded one.
      episode.turns.forEach((turn, turnIndex) => {
        const full = whole.turns[turnIndex]!;
        assert.deepEqual(turn.tokens, full.tokens.slice(0, turn.tokens.length));
        if (turn.tokens.length < full.tokens.length) assert.equal(turn.finishReason, 'length');
      });
      if (episode.turns.length < team.protocol.turnOrder.length) {
        ended++;
        assert.equal(spent, 7, 'only a spent bound ends an episode early');
      }
    });
    assert.ok(ended > 0, 'some episodes ran out of tokens before the last turn');
    assert.equal(
      bounded.generatedTokens,
      bounded.episodes
        .flatMap((episode) => episode.turns)
        .reduce((n, turn) => n + turn.tokens.length, 0),
    );
  });

  test('every drawn token is reported as it is drawn, in order, with where it falls', async () => {
    const drawn: DrawnToken[] = [];
    const played = await playEpisodes({ ...base, onToken: (token) => drawn.push(token) });
    played.episodes.forEach((episode, episodeIndex) =>
      episode.turns.forEach((turn) => {
        const reported = drawn.filter(
          (entry) => entry.episodeIndex === episodeIndex && entry.turnIndex === turn.turnIndex,
        );
        assert.deepEqual(
          reported.map((entry) => entry.token),
          turn.tokens,
        );
        assert.deepEqual(
          reported.map((entry) => entry.logProb),
          turn.logProbs,
        );
        assert.ok(reported.every((entry) => entry.agentIndex === turn.agentIndex));
      }),
    );
  });

  test('an aborted signal stops the play with its reason', async () => {
    const controller = new AbortController();
    const reason = new Error('the client went away');
    let turns = 0;
    const playing = playEpisodes({
      ...base,
      onToken: (drawn) => {
        if (drawn.turnIndex > turns) turns = drawn.turnIndex;
        if (drawn.turnIndex === 1) controller.abort(reason);
      },
      signal: controller.signal,
    });
    await assert.rejects(playing, (error) => error === reason);
    assert.equal(turns, 1, 'no turn began after the abort');
  });
});
