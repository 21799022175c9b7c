// @sluice/core alone: its whole application root, as an upper bound for what any limiter ships from core.
export * from '@sluice/core';
