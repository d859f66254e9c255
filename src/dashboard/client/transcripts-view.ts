/**
 * What the agents wrote: a stage's transcripts of one run (GET /api/runs/:id/transcripts), with
 * a run and a stage to choose (the latest stage by default, followed as the run goes on). Each
 * turn shows its agent, its token count and why it ended; text is inserted as text, never HTML.
 */
import { getJson, type RunSummary, type TranscriptsChunk, type Transcript } from './api.js';
import { byId, el } from './format.js';

interface Choice {
  runId: string | null;
  /** null: follow the latest stage. */
  stage: number | null;
}

const choice: Choice = { runId: null, stage: null };

function select(
  label: string,
  options: Array<{ value: string; text: string }>,
  chosen: string,
  onChange: (value: string) => void,
): HTMLElement {
  const wrapper = el('label', 'picker', `${label} `);
  const picker = document.createElement('select');
  for (const option of options) {
    const node = document.createElement('option');
    node.value = option.value;
    node.textContent = option.text;
    picker.appendChild(node);
  }
  picker.value = chosen;
  picker.addEventListener('change', () => onChange(picker.value));
  wrapper.appendChild(picker);
  return wrapper;
}

function transcriptCard(transcript: Transcript): HTMLElement {
  const card = el('div', 'transcript');
  card.appendChild(
    el(
      'div',
      'transcript-head',
      `problem ${transcript.problem.id} · episode ${transcript.sample} · reward ${transcript.reward}${transcript.correct ? ' (correct)' : ''}`,
    ),
  );
  card.appendChild(el('div', 'muted', `prompt: ${transcript.problem.prompt}`));
  card.appendChild(el('div', 'muted', `expected: ${transcript.problem.answer}`));
  for (const turn of transcript.turns) {
    const row = el('div', 'turn');
    row.appendChild(
      el(
        'div',
        'turn-head',
        `${turn.agent} — ${turn.tokens} token${turn.tokens === 1 ? '' : 's'}, ended by ${turn.ended}${turn.truncated ? ' (text cut)' : ''}`,
      ),
    );
    row.appendChild(el('pre', 'turn-text', turn.text === '' ? '(empty)' : turn.text));
    card.appendChild(row);
  }
  return card;
}

/** Draws the chosen run's transcripts; `runs` are the dashboard's runs. */
export async function renderTranscripts(runs: RunSummary[]): Promise<void> {
  const root = byId('transcripts');
  if (runs.length === 0) return;
  if (choice.runId === null || !runs.some((run) => run.id === choice.runId))
    choice.runId = runs[0]!.id;
  const query = choice.stage === null ? '' : `?stage=${choice.stage}`;
  const chunk = await getJson<TranscriptsChunk>(`/api/runs/${choice.runId}/transcripts${query}`);
  const redraw = () => void renderTranscripts(runs);
  const controls = el('div', 'transcript-controls');
  controls.appendChild(
    select(
      'run',
      runs.map((run) => ({ value: run.id, text: run.label })),
      choice.runId,
      (value) => {
        choice.runId = value;
        choice.stage = null;
        redraw();
      },
    ),
  );
  controls.appendChild(
    select(
      'stage',
      [
        { value: 'latest', text: 'latest' },
        ...chunk.stages.map((stage) => ({ value: String(stage), text: String(stage) })),
      ],
      choice.stage === null ? 'latest' : String(choice.stage),
      (value) => {
        choice.stage = value === 'latest' ? null : Number(value);
        redraw();
      },
    ),
  );
  const list = el('div', 'transcripts');
  if (chunk.transcripts.length === 0)
    list.appendChild(
      el('p', 'muted', 'no transcripts yet: a run writes a few from its first stage on'),
    );
  else {
    list.appendChild(el('p', 'muted', `stage ${chunk.stage}`));
    for (const transcript of chunk.transcripts) list.appendChild(transcriptCard(transcript));
  }
  root.replaceChildren(controls, list);
}
