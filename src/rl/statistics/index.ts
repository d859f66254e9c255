/**
 * The statistics teamtr reports, one implementation each (docs/guides/statistics.md says which
 * statistic uses which): descriptive statistics, the normal distribution, rank correlation and
 * the least-squares line, the bootstrap (plain, stratified, paired, clustered, ratio) and
 * one-sided confidence bounds. Pure functions; resampling draws from a generator passed in.
 */
export * from './descriptive.js';
export * from './normal.js';
export * from './correlation.js';
export * from './bootstrap.js';
export * from './bounds.js';
