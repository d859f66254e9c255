import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { nextSteps, shellWord, teamtrCommand, type Invocation } from './next-steps.js';

const clone: Invocation = {
  script: '/home/ada/teamtr/bin/teamtr.js',
  userDirectory: '/home/ada/teamtr',
  npmCommand: undefined,
  teamtrOnPath: null,
  ownBin: '/home/ada/teamtr/bin/teamtr.js',
};

describe('the command a user can paste', () => {
  test('npx teamtr when npm started teamtr (npm run demo in a clone, npx in an app)', () => {
    assert.equal(teamtrCommand({ ...clone, npmCommand: 'run-script' }), 'npx teamtr');
    assert.equal(teamtrCommand({ ...clone, npmCommand: 'exec' }), 'npx teamtr');
  });

  test('teamtr when the teamtr on PATH is this one (a global install)', () => {
    const global = '/usr/lib/node_modules/teamtr/bin/teamtr.js';
    assert.equal(
      teamtrCommand({ ...clone, script: '/usr/bin/teamtr', ownBin: global, teamtrOnPath: global }),
      'teamtr',
    );
    // Another teamtr on PATH is not the one that ran.
    assert.equal(
      teamtrCommand({ ...clone, teamtrOnPath: '/usr/lib/node_modules/teamtr/bin/teamtr.js' }),
      'node bin/teamtr.js',
    );
  });

  test('node and the script as the user ran it, else', () => {
    assert.equal(teamtrCommand(clone), 'node bin/teamtr.js');
    assert.equal(
      teamtrCommand({ ...clone, userDirectory: '/tmp' }),
      'node /home/ada/teamtr/bin/teamtr.js',
    );
    assert.equal(
      teamtrCommand({ ...clone, script: '/home/ada/my teamtr/bin/teamtr.js', userDirectory: '/' }),
      "node 'home/ada/my teamtr/bin/teamtr.js'",
    );
  });

  test('shell words are quoted only when needed', () => {
    assert.equal(shellWord('runs/demo-2030_01-02'), 'runs/demo-2030_01-02');
    assert.equal(shellWord("it's here"), `'it'\\''s here'`);
  });

  test('the run directory is written from where the user is', () => {
    const steps = nextSteps('/home/ada/teamtr/runs/demo-1', clone);
    assert.match(steps, /^\nNext steps:\n {2}node bin\/teamtr\.js dashboard runs\/demo-1 +# /);
    const elsewhere = nextSteps('/home/ada/teamtr/runs/demo-1', {
      ...clone,
      userDirectory: '/srv',
    });
    assert.match(elsewhere, /dashboard \/home\/ada\/teamtr\/runs\/demo-1 /);
  });
});
