import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { Team } from '../../../team/team.js';
import { oneAgentBatch } from '../../test-support/one-agent-batch.js';
import { clippedSettings } from '../../test-support/trust-region-settings.js';
import type { UnitEngine, UpdatePlan, UpdateSession } from '../engine.js';
import { unitEngine } from '../engines.js';
import { collectUnitTokens, type UnitTokens } from '../token-grid.js';
import type { TrainableUnit } from '../units.js';

/**
 * The contract every UnitEngine passes (hono's shared router suite, our backends'
 * backend.suite.ts): `connect` gives a unit whose model is the one-agent tiny team's (`team`,
 * which sampled `batch`), with a fresh optimizer; two units connected alike start identical.
 * `exact`: the engine computes KL and total variation exactly (else it says they are estimated).
 */
export interface EngineContractSetup {
  connect(team: Team, learningRate: number): Promise<TrainableUnit>;
  exact: boolean;
}

const learningRate = 3e-2;

export function engineContract(name: string, setup: EngineContractSetup): void {
  describe(`UnitEngine contract: ${name}`, () => {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'teamtr-engine-contract-'));
    const engines: UnitEngine[] = [];
    after(() => {
      engines.forEach((engine) => engine.dispose());
      rmSync(scratch, { recursive: true, force: true });
    });

    /** A unit on the tiny team's model, its engine, and an update plan over the batch. */
    async function started(delta = 10) {
      const { team, batch, advantages } = await oneAgentBatch();
      const unit = await setup.connect(team, learningRate);
      const engine = unitEngine(unit);
      engines.push(engine);
      const tokens = collectUnitTokens(batch, unit.agentIndices);
      const half = Math.ceil(batch.trajectories.length / 2);
      const rows = batch.trajectories.map((_trajectory, index) => index);
      const minibatches = [rows.slice(0, half), rows.slice(half)].map((part) =>
        collectUnitTokens(batch, unit.agentIndices, part),
      );
      const plan: UpdatePlan = { tokens, advantages, settings: clippedSettings(1, 2), delta };
      return { engine, batch, tokens, minibatches, plan };
    }

    const logProbs = async (engine: UnitEngine, tokens: UnitTokens) =>
      (await engine.completionLogProbs(tokens.items)).map((values) => Array.from(values));

    test('log-probs of given tokens: one per completion token, finite, ≤ 0, the same twice', async () => {
      const { engine, tokens } = await started();
      const first = await logProbs(engine, tokens);
      assert.deepEqual(
        first.map((values) => values.length),
        tokens.items.map((item) => item.completion.length),
      );
      assert.ok(first.flat().every((value) => Number.isFinite(value) && value <= 0));
      assert.deepEqual(await logProbs(engine, tokens), first);
    });

    test('before any step the KL is exactly 0 and in region; quantities say if they are exact', async () => {
      const { engine, plan } = await started();
      const measured = await (await engine.beginUpdate(plan)).measure(null);
      assert.equal(measured.kl, 0);
      assert.equal(measured.maxTokenKl, 0);
      assert.equal(measured.inRegion, true);
      assert.ok(measured.evidence().perTokenKl.every((value) => value === 0));
      if (setup.exact) {
        assert.equal(measured.estimates, undefined);
        assert.ok(measured.probabilityShiftByRank().length > 0);
      } else {
        assert.equal(measured.estimates?.klEstimated, true);
        assert.equal(measured.estimates?.totalVariationEstimated, true);
        assert.deepEqual(measured.probabilityShiftByRank(), []);
      }
    });

    test('a step moves the policy, the measurement sees it, and undoing it restores it exactly', async () => {
      const { engine, tokens, minibatches, plan } = await started();
      const before = await logProbs(engine, tokens);
      const update = await engine.beginUpdate(plan);
      const step = await update.step(minibatches[0]!);
      assert.ok(Number.isFinite(step.loss) && step.gradientNorm > 0);
      const measured = await update.measure(null);
      assert.ok(measured.kl > 0 && measured.maxTokenKl >= measured.kl);
      assert.notDeepEqual(await logProbs(engine, tokens), before);
      await update.undoStep();
      assert.deepEqual(await logProbs(engine, tokens), before);
      assert.equal((await update.measure(null)).kl, 0);
    });

    test('a measurement out of region says so; δ decides', async () => {
      const { engine, minibatches, plan } = await started(1e-9);
      const update = await engine.beginUpdate(plan);
      await update.step(minibatches[0]!);
      assert.equal((await update.measure(minibatches[1]!)).inRegion, false);
    });

    test('undoing returns to the kept parameters, not to the start', async () => {
      const { engine, tokens, minibatches, plan } = await started();
      const update = await engine.beginUpdate(plan);
      await update.step(minibatches[0]!);
      await update.measure(null);
      await update.keep();
      const kept = await logProbs(engine, tokens);
      await update.step(minibatches[1]!);
      await update.undoStep();
      assert.deepEqual(await logProbs(engine, tokens), kept);
    });

    test('telling measure the next minibatch changes no number of the step that follows', async () => {
      const ahead = await started();
      const plain = await started();
      const run = async (
        { engine, minibatches, plan }: Awaited<ReturnType<typeof started>>,
        lookAhead: boolean,
      ) => {
        const update = await engine.beginUpdate(plan);
        const first = await update.step(minibatches[0]!);
        const measured = await update.measure(lookAhead ? minibatches[1]! : null);
        await update.keep();
        const second = await update.step(minibatches[1]!);
        return { first, second, kl: measured.kl };
      };
      assert.deepEqual(await run(ahead, true), await run(plain, false));
      assert.deepEqual(
        await logProbs(ahead.engine, ahead.tokens),
        await logProbs(plain.engine, plain.tokens),
      );
    });

    test('a step is scaled along its direction where the engine can, else refused clearly', async () => {
      const { engine, tokens, minibatches, plan } = await started();
      const update: UpdateSession = await engine.beginUpdate(plan);
      await update.step(minibatches[0]!);
      const end = await logProbs(engine, tokens);
      const full = (await update.measure(null)).kl;
      if (!update.scalesSteps) {
        await assert.rejects(update.scaleStep(0.5), /can be stepped or reloaded but not scaled/);
        return;
      }
      await update.scaleStep(0.25);
      const quarter = (await update.measure(null)).kl;
      assert.ok(
        quarter > 0 && quarter < full,
        `KL ${quarter} at 1/4 of the step, ${full} at all of it`,
      );
      await update.scaleStep(1);
      assert.deepEqual(await logProbs(engine, tokens), end);
    });

    test('a snapshot restores parameters and optimizer state: the same step again lands in the same place', async () => {
      const { engine, tokens, minibatches, plan } = await started();
      const snapshot = await engine.snapshot();
      const stepOnce = async () => {
        const update = await engine.beginUpdate(plan);
        await update.step(minibatches[0]!);
        return logProbs(engine, tokens);
      };
      const before = await logProbs(engine, tokens);
      const once = await stepOnce();
      await stepOnce();
      await snapshot.restore();
      assert.deepEqual(await logProbs(engine, tokens), before);
      assert.deepEqual(await stepOnce(), once);
    });

    test('save and load round-trip the unit', async () => {
      const { engine, tokens, minibatches, plan } = await started();
      const update = await engine.beginUpdate(plan);
      await update.step(minibatches[0]!);
      const saved = await logProbs(engine, tokens);
      const directory = mkdtempSync(path.join(scratch, 'unit-'));
      await engine.save(directory, { tokenizer: { engineContract: true } });
      await update.step(minibatches[1]!);
      assert.notDeepEqual(await logProbs(engine, tokens), saved);
      await engine.load(directory);
      assert.deepEqual(await logProbs(engine, tokens), saved);
    });

    test('held-out evidence fixes π_old when asked and reads the change after', async () => {
      const { engine, batch, minibatches, plan } = await started();
      const heldOut = await engine.holdOut(batch);
      const update = await engine.beginUpdate(plan);
      await update.step(minibatches[0]!);
      const evidence = await heldOut.after();
      assert.equal(evidence.tokens.totalTokens, plan.tokens.totalTokens);
      assert.ok(evidence.perTokenKl.some((value) => value > 0));
      assert.ok(evidence.perTokenTotalVariation.some((value) => value > 0));
    });
  });
}
