import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseWithSchema } from '../../util/schema.js';
import { trainConfigSchema, type TrainConfigInput } from '../config/train-config.js';
import { runProvenance } from './provenance.js';
import { createTrainingFixture } from '../test-support/fixture.js';
import { train } from '../trainer.js';
import { decodeEvent, type TensorboardEvent } from './tensorboard-events.js';
import { decodeRecords } from './tfrecord.js';
import { readTranscripts } from './transcripts.js';

/** The events of a run's TensorBoard file, without wall times and durations. */
function events(runDirectory: string): Omit<TensorboardEvent, 'wallTime'>[] {
  const name = readdirSync(runDirectory).find((entry) => entry.startsWith('events.out.tfevents.'));
  assert.ok(name, `${runDirectory} holds a TensorBoard event file`);
  return decodeRecords(readFileSync(path.join(runDirectory, name))).map((record) => {
    const { wallTime, values, ...event } = decodeEvent(record);
    assert.ok(wallTime > 1.6e9);
    if (!values) return event;
    return { ...event, values: values.filter((value) => !/elapsedSeconds/.test(value.tag)) };
  });
}

let directory: string;
let config: TrainConfigInput;
let straight: string;

before(async () => {
  const fixture = await createTrainingFixture();
  directory = fixture.directory;
  config = { ...fixture.config, tracking: { transcriptsPerStage: 3 } };
  straight = path.join(directory, 'straight');
  await train({ config, runDirectory: straight });
});
after(() => rmSync(directory, { recursive: true, force: true }));

describe('a run writes what its agents wrote, and its metrics for TensorBoard', () => {
  test('each stage keeps a few transcripts: every turn, its tokens and why it ended, the reward', () => {
    const transcripts = readTranscripts(straight);
    assert.deepEqual(
      transcripts.map((transcript) => transcript.stage),
      [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4],
    );
    for (const transcript of transcripts) {
      assert.equal(transcript.turns.length, 3);
      assert.deepEqual(
        transcript.turns.map((turn) => turn.agent),
        ['agent0', 'agent1', 'agent2'],
      );
      for (const turn of transcript.turns) {
        assert.ok(turn.tokens >= 1 && turn.tokens <= 2, 'protocol.maxTurnTokens is 2');
        if (turn.ended === 'turn limit') assert.equal(turn.tokens, 2);
        if (turn.tokens === 1) assert.equal(turn.ended, 'stop');
        assert.ok(['stop', 'turn limit'].includes(turn.ended));
      }
      assert.equal(transcript.problem.prompt, 'ab');
      assert.ok(transcript.reward === 0 || transcript.reward === 1);
      assert.equal(transcript.correct, transcript.reward === 1);
    }
    const endings = new Set(transcripts.flatMap((t) => t.turns.map((turn) => turn.ended)));
    assert.deepEqual([...endings].sort(), ['stop', 'turn limit']);
    // Three episodes of stage 1 from three different prompts.
    assert.equal(new Set(transcripts.slice(0, 3).map((t) => t.problem.id)).size, 3);
    assert.ok(statSync(path.join(straight, 'transcripts.jsonl')).size < 10_000);
  });

  test('the TensorBoard file holds every record’s numbers at its stage, and the transcripts', () => {
    const metrics = readFileSync(path.join(straight, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const written = events(straight);
    assert.deepEqual(written[0], { step: 0, fileVersion: 'brain.Event:2' });
    const scalars = new Map<string, number>();
    for (const event of written)
      for (const value of event.values ?? [])
        if ('scalar' in value) scalars.set(`${value.tag}@${event.step}`, value.scalar);
    for (const record of metrics.filter((line) => line.type === 'eval'))
      assert.equal(
        scalars.get(`eval/accuracy@${record.stage}`),
        Math.fround(record.accuracy as number),
      );
    const update = metrics.find((line) => line.type === 'update')!;
    assert.equal(
      scalars.get(`update/kl/${update.agent}@${update.stage}`),
      Math.fround(update.kl as number),
    );
    assert.equal(scalars.get(`update/inRegion/${update.agent}@${update.stage}`), 1);
    const stage = metrics.find((line) => line.type === 'stage')!;
    assert.equal(
      scalars.get(`stage/rewardAfter@${stage.stage}`),
      Math.fround(stage.rewardAfter as number),
    );
    const texts = written.flatMap((event) =>
      (event.values ?? []).flatMap((value) => ('text' in value ? [[event.step, value.text]] : [])),
    );
    assert.deepEqual(
      texts.map(([step]) => step),
      [1, 2, 3, 4],
    );
    assert.deepEqual(written[1]!.step, 0, 'the evaluation before training comes first');
    assert.match(
      String(texts[0]![1]),
      /stage 1 · problem .* turn 0 agent0 — \d tokens?, ended by/s,
    );
  });

  test('a run that crashed and resumed ends with the same transcripts and events', async () => {
    const resumed = path.join(directory, 'resumed');
    // Stop hard during stage 3 (after its transcripts, before its metrics; the checkpoint is
    // stage 2's): the resumed run must drop what stage 3 wrote and write it again.
    await assert.rejects(
      train({
        config,
        runDirectory: resumed,
        onProgress: (event) => {
          if (event.kind === 'stage' && event.stage === 3) throw new Error('crash');
        },
      }),
      /crash/,
    );
    assert.equal(Math.max(...readTranscripts(resumed).map((t) => t.stage)), 3);
    await train({ config: {}, runDirectory: resumed, resume: true });
    assert.deepEqual(readTranscripts(resumed), readTranscripts(straight));
    assert.deepEqual(events(resumed), events(straight));
  });

  test('config.json records the teamtr version, the host and the task’s source', () => {
    const { provenance } = JSON.parse(readFileSync(path.join(straight, 'config.json'), 'utf8'));
    const manifest = JSON.parse(
      readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    );
    assert.equal(provenance.teamtrVersion, manifest.version);
    assert.equal(provenance.node, process.version);
    assert.equal(provenance.host.cores, os.cpus().length);
    assert.equal(provenance.host.memoryBytes, os.totalmem());
    assert.equal(provenance.host.cpu, os.cpus()[0]!.model.trim());
    assert.deepEqual(provenance.task, { source: 'config', name: 'jsonl' });
    const module = path.join(directory, 'task.mjs');
    writeFileSync(module, 'export default {};\n');
    const parsed = parseWithSchema(
      trainConfigSchema,
      { task: { name: 'code', task: 'sums' } },
      'config',
    );
    assert.deepEqual(runProvenance(parsed, module).task, {
      source: 'module',
      name: 'sums',
      path: module,
      sha256: createHash('sha256').update('export default {};\n').digest('hex'),
    });
    assert.deepEqual(runProvenance(parsed, undefined).task, { source: 'code', name: 'sums' });
  });
});
