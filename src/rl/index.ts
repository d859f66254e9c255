/**
 * The RL math of TeamTR as pure functions over flat typed arrays: advantages, losses and their
 * gradients, exact token KL, certificates and run diagnostics. Nothing here knows of models,
 * teams or files; see README.md for the data layout and the certificate's derivation.
 */
export * from './layout.js';
export * from './statistics/index.js';
export * from './advantages.js';
export * from './aggregation.js';
export * from './surrogate.js';
export * from './value.js';
export * from './kl.js';
export * from './total-variation.js';
export * from './certificate.js';
export * from './improvement.js';
export * from './occupancy-gap.js';
export * from './certificate-confidence.js';
export * from './diagnostics.js';
export * from './rank-shift.js';
export * from './objectives/index.js';
