// The library face of @sluice/cli: what the commands do, callable from code. The `sluice` binary is src/cli.ts.
export { tune, DEFAULT_FIELDS } from './tune/tune.js';
export type { LogFormat, TuneOptions, TuneProgress } from './tune/tune.js';
export type { TuneReport, CandidateReport, Recommendation, Percentiles } from './tune/report.js';
export { parseRuleFlag, parseLimitsFlag, candidate } from './tune/candidates.js';
export type { Candidate } from './tune/candidates.js';
export { generateLogs, generateLogLines } from './tune/generate.js';
export type { GenerateLogsOptions } from './tune/generate.js';
export { textReport } from './tune/report-text.js';
export { htmlReport } from './tune/report-html.js';
export { SKIP_REASONS } from './tune/line-result.js';
export type { SkipReason } from './tune/line-result.js';
