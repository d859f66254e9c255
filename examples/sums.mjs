// The README's task in code, made concrete: two agents add two numbers below 50 — a solver
// ("Add. ") and a finalizer ("Answer. ") that sees the solver's reply — scored by exact match.
// With the built-in general model for both agents (configs/sums-general.yaml):
//
//   teamtr train -c configs/sums-general.yaml --task-module examples/sums.mjs --run-dir runs/sums
//
// The untrained team is right on about a quarter of held-out problems at temperature 1, a
// third after 100,000 generated tokens (docs/guides/own-task.md).
//
// 2,500 sums a+b with a, b in 0..49: every fifth is held out for evaluation.
const sums = [];
for (let a = 0; a < 50; a++) for (let b = 0; b < 50; b++) sums.push({ prompt: `${a}+${b}`, answer: String(a + b) });

export default {
  name: 'sums',
  problems: {
    train: sums.filter((_, index) => index % 5 !== 0),
    eval: sums.filter((_, index) => index % 5 === 0),
  },
  roles: [
    { name: 'solver', prompt: 'Add. ' },
    { name: 'finalizer', prompt: 'Answer. ' },
  ],
  reward: async ({ problem, answer }) => (answer.trim() === problem.answer ? 1 : 0),
};
