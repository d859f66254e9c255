// The conventions of a convention-task team (src/tasks/convention.ts): team accuracy on eval
// problems (one episode each, as `teamtr eval` samples them) and, per agent, the share of its
// messages in the cipher, how it bets on messages that read both ways, and how often that bet
// matched the code its writer used (the handoff's coordination).
//
//   node --import tsx scripts/convention-report.mjs --run runs/convention-teamtr
//   node --import tsx scripts/convention-report.mjs --agents 4     (the untrained built-in team)
//     [--problems 150] [--seed 0] [--temperature 1] [--json]
import { parseArgs } from 'node:util';
import { conventionSummary, getTask } from '../src/tasks/index.ts';
import { buildTeam } from '../src/trainer/setup/build-team.ts';
import { trainConfigSchema } from '../src/trainer/config/train-config.ts';
import { evaluateTeam } from '../src/trainer/evaluate.ts';
import { openRun } from '../src/trainer/open-run.ts';
import { schedules } from '../src/trainer/schedules.ts';

const { values } = parseArgs({
  options: {
    run: { type: 'string' },
    agents: { type: 'string', default: '4' },
    problems: { type: 'string', default: '150' },
    seed: { type: 'string', default: '0' },
    temperature: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});

async function openTeam() {
  if (values.run) return openRun(values.run);
  const config = trainConfigSchema.parse({
    task: { name: 'convention', agents: Number(values.agents) },
  });
  const task = await getTask(config.task);
  return { config, task, built: await buildTeam(config, task, schedules[config.schedule]) };
}

const { config, task, built } = await openTeam();
if (task.name !== 'convention') {
  console.error(`${values.run}: a run of task "${task.name}", not convention`);
  process.exit(2);
}
const seed = Number(values.seed);
const problems = task.split('eval', { seed, count: Number(values.problems) });
const evaluation = await evaluateTeam({
  team: built.team,
  task,
  problems,
  temperature: Number(values.temperature),
  seed: `${seed}/eval`,
});
const agents = conventionSummary(
  evaluation.batch.trajectories.map((trajectory) => ({
    problem: problems[trajectory.problemIndex],
    turns: trajectory.turns.map((turn) => turn.text),
  })),
  config.task,
);
const result = {
  source: values.run ?? `builtin:convention, ${values.agents} agents`,
  accuracy: evaluation.accuracy,
  interval: evaluation.interval,
  problems: evaluation.count,
  agents,
};
if (values.json) {
  console.log(JSON.stringify(result));
} else {
  const percent = (value) => (value === null ? '   –' : `${(100 * value).toFixed(0).padStart(3)}%`);
  console.log(
    `${result.source}: team accuracy ${percent(result.accuracy)} [${percent(result.interval[0])}, ${percent(result.interval[1])}] on ${result.problems} eval problems`,
  );
  console.log('agent  cipher-writes  ambiguous-reads  read-as-cipher  coordinated  wrong');
  agents.forEach((agent, index) =>
    console.log(
      `${String.fromCharCode(65 + index).padEnd(5)}  ${percent(agent.cipherWriteShare).padStart(13)}  ${String(agent.ambiguousReads).padStart(15)}  ${percent(agent.cipherReadShare).padStart(14)}  ${percent(agent.coordinatedShare).padStart(11)}  ${percent(agent.wrongShare).padStart(5)}`,
    ),
  );
}
