import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { Team } from '../../team/team.js';
import type { TeamBatch, Trajectory } from '../../team/types.js';
import {
  maxTurnCharacters,
  readTranscripts,
  sampleTranscripts,
  transcriptOf,
} from './transcripts.js';

const directory = mkdtempSync(path.join(os.tmpdir(), 'teamtr-transcripts-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const team = {
  agents: [
    { name: 'solver', rolePrompt: '', speakerTag: 'S:', policy: null, maxTurnTokens: 8 },
    { name: 'finalizer', rolePrompt: '', speakerTag: 'F:', policy: null },
  ],
  protocol: { turnOrder: [0, 1], answerTurn: 1, permutePerEpisode: false, maxTurnTokens: 4 },
} as unknown as Team;

const turn = (
  agentIndex: number,
  text: string,
  tokens: number,
  finishReason: 'stop' | 'length',
) => ({
  turnIndex: agentIndex,
  agentIndex,
  inputIds: [],
  tokens: Array.from({ length: tokens }, () => 1),
  logProbs: [],
  text,
  finishReason,
});

const trajectory = (
  problemIndex: number,
  sampleIndex: number,
  turns: Trajectory['turns'],
): Trajectory => ({
  problemIndex,
  sampleIndex,
  speakingOrder: [0, 1],
  turns,
  answerText: turns[turns.length - 1]!.text,
  reward: sampleIndex === 0 ? 1 : 0,
  correct: sampleIndex === 0,
});

test('a turn ends by its stop token, its own limit, or the episode’s total limit', () => {
  const batch: TeamBatch = {
    problems: [{ id: 'p0', prompt: '2+3', answer: '5' }],
    groupSize: 1,
    trajectories: [],
    generatedTokens: 0,
    resampledFromTurn: 0,
  };
  const stopped = transcriptOf(
    team,
    batch,
    trajectory(0, 0, [turn(0, 'five', 3, 'stop'), turn(1, '5', 2, 'stop')]),
    2,
  );
  assert.deepEqual(stopped, {
    stage: 2,
    problem: { id: 'p0', prompt: '2+3', answer: '5' },
    sample: 0,
    reward: 1,
    correct: true,
    turns: [
      { agent: 'solver', text: 'five', tokens: 3, ended: 'stop' },
      { agent: 'finalizer', text: '5', tokens: 2, ended: 'stop' },
    ],
  });
  // The solver's own limit is 8 (agents[].maxTurnTokens), the finalizer's the protocol's 4.
  const cut = transcriptOf(
    team,
    batch,
    trajectory(0, 1, [turn(0, 'x', 8, 'length'), turn(1, 'y', 4, 'length')]),
    2,
  );
  assert.deepEqual(
    cut.turns.map((entry) => entry.ended),
    ['turn limit', 'turn limit'],
  );
  const total = transcriptOf(team, batch, trajectory(0, 1, [turn(0, 'x', 5, 'length')]), 2);
  assert.deepEqual(
    total.turns.map((entry) => entry.ended),
    ['total limit'],
  );
  const long = transcriptOf(
    team,
    batch,
    trajectory(0, 1, [turn(0, 'z'.repeat(maxTurnCharacters + 10), 8, 'length')]),
    2,
  );
  assert.equal(long.turns[0]!.text.length, maxTurnCharacters + 1);
  assert.equal(long.turns[0]!.truncated, true);
});

test('a stage keeps its first episodes of as many prompts as it can', () => {
  const problems = ['a', 'b', 'c'].map((id) => ({ id, prompt: id, answer: id }));
  const trajectories = problems.flatMap((_problem, problemIndex) =>
    [0, 1].map((sampleIndex) => trajectory(problemIndex, sampleIndex, [turn(0, 'x', 1, 'stop')])),
  );
  const batch: TeamBatch = {
    problems,
    groupSize: 2,
    trajectories,
    generatedTokens: 0,
    resampledFromTurn: 0,
  };
  const kept = sampleTranscripts(team, batch, 1, 4);
  assert.deepEqual(
    kept.map((entry) => [entry.problem.id, entry.sample]),
    [
      ['a', 0],
      ['b', 0],
      ['c', 0],
      ['a', 1],
    ],
  );
  assert.deepEqual(sampleTranscripts(team, batch, 1, 0), []);
});

test('a damaged transcripts file is named, with what to do', () => {
  const run = path.join(directory, 'run');
  rmSync(run, { recursive: true, force: true });
  mkdirSync(run);
  writeFileSync(path.join(run, 'transcripts.jsonl'), '{"stage":1}\nnot json\n{"stage":2');
  assert.throws(
    () => readTranscripts(run),
    /transcripts\.jsonl: line 2 is not a JSON transcript.*delete it/,
  );
});

test('a transcripts file that is not a regular file is refused at once, naming it', () => {
  const run = path.join(directory, 'fifo-run');
  mkdirSync(run, { recursive: true });
  execFileSync('mkfifo', [path.join(run, 'transcripts.jsonl')]);
  // Read whole, a FIFO with no writer would wait forever.
  assert.throws(() => readTranscripts(run), /transcripts\.jsonl.*not a regular file|FIFO/);
});
