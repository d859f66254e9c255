import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeCertificate, shiftsBefore } from './certificate.js';

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-15, `${actual} vs ${expected}`);

test('pairs count only shifts strictly before each target position', () => {
  const shifts = [
    { position: 0, shift: 1 },
    { position: 2, shift: 10 },
    { position: 5, shift: 100 },
  ];
  assert.equal(shiftsBefore([0], shifts), 0);
  assert.equal(shiftsBefore([2, 3], shifts), 1 + 11);
  assert.equal(shiftsBefore([6], shifts), 111);
});

test('fresh occupancy: L − 2ε Σ_k Σ_{j<k} S_j, and the §5 form agrees', () => {
  const certificate = computeCertificate({
    surrogate: 0.5,
    advantageBound: 0.2,
    positions: [4, 5, 6],
    ownShifts: [
      { position: 4, shift: 0.01 },
      { position: 5, shift: 0.02 },
      { position: 6, shift: 0.03 },
    ],
    earlierShifts: [],
    earlierAdvantageBounds: [],
  });
  // Pairs (4<5), (4<6), (5<6): 0.01 + 0.01 + 0.02 = 0.04.
  close(certificate.ownShiftPenalty, 2 * 0.2 * 0.04);
  close(certificate.certificate, 0.5 - 0.016);
  close(certificate.specFormCertificate, certificate.certificate);
  assert.equal(certificate.occupancyShiftPenalty, 0);
  assert.equal(certificate.advantageDriftPenalty, 0);
});

test('stale occupancy: earlier agents shift every later token; T tokens make the §5 form smaller', () => {
  const certificate = computeCertificate({
    surrogate: 0.5,
    advantageBound: 0.2,
    positions: [2, 3],
    ownShifts: [
      { position: 2, shift: 0.05 },
      { position: 3, shift: 0.05 },
    ],
    earlierShifts: [
      { position: 0, shift: 0.1 },
      { position: 1, shift: 0.1 },
    ],
    earlierAdvantageBounds: [
      { position: 0, bound: 0.3 },
      { position: 1, bound: 0.3 },
    ],
  });
  close(certificate.ownShiftPenalty, 2 * 0.2 * 0.05);
  close(certificate.occupancyShiftPenalty, 2 * 0.2 * (0.2 + 0.2));
  // Earlier agents speak before the updated one: no drift.
  assert.equal(certificate.advantageDriftPenalty, 0);
  close(certificate.specFormCertificate, 0.5 - 0.02 - 2 * 0.2 * 0.2);
  assert.ok(certificate.specFormCertificate > certificate.certificate);
});

test('stale occupancy over several rounds: earlier agents speaking later pay the drift term', () => {
  const certificate = computeCertificate({
    surrogate: 1,
    advantageBound: 0.1,
    positions: [1, 3],
    ownShifts: [
      { position: 1, shift: 0.02 },
      { position: 3, shift: 0.02 },
    ],
    earlierShifts: [
      { position: 0, shift: 0.05 },
      { position: 2, shift: 0.05 },
    ],
    earlierAdvantageBounds: [
      { position: 0, bound: 0.4 },
      { position: 2, bound: 0.5 },
    ],
  });
  // Position 2 comes after the first updated position 1: TV ≤ (0.05 + 0.02) + 0.05.
  close(certificate.advantageDriftPenalty, 2 * 0.5 * 0.12);
  close(certificate.occupancyShiftPenalty, 2 * 0.1 * (0.05 + 0.1));
  close(
    certificate.penalty,
    certificate.ownShiftPenalty + certificate.occupancyShiftPenalty + 0.12,
  );
});
