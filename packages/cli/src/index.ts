// The library face of @sluice/cli: what the commands do, callable from code. The `sluice` binary is src/cli.ts.
export { tune, DEFAULT_FIELDS } from './tune.js';
export type { LogFormat, TuneOptions, TuneProgress } from './tune.js';
export type { TuneReport, CandidateReport, Recommendation, Percentiles } from './report.js';
export { parseRuleFlag, parseLimitsFlag, candidate } from './candidates.js';
export type { Candidate } from './candidates.js';
export { generateLogs, generateLogLines } from './generate.js';
export type { GenerateLogsOptions } from './generate.js';
export { textReport } from './report-text.js';
export { htmlReport } from './report-html.js';
export { SKIP_REASONS } from './line-result.js';
export type { SkipReason } from './line-result.js';
