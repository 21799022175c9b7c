import { configScript } from 'virtual:sluice-lua';

/**
 * The compare and set of runtime configuration writers (core's ConfigSource.replace) that both Redis-protocol
 * stores' config sources run with EVAL: src/lua/config.lua, linted with the other scripts.
 */
export const REPLACE_CONFIG_SCRIPT: string = configScript;
