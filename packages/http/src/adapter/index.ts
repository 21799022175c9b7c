// `@sluice/http/adapter`: the kit a framework adapter is built from (@sluice/express, @sluice/fastify, @sluice/hono
// and @sluice/next use nothing else): checking an adapter's options against the handler's, writing header fields on a
// Node response, noticing a client that went away, running work after the response, and the traffic stack's layers.
// An application imports none of it; it calls its framework's adapter, or `createHandler` from the root.
export { checkOptionsObject } from '../handler/compile-options.js';
export { HTTP_OPTION_NAMES } from '../handler/options.js';
export { nodeHeaderTarget, writeHeaders } from '../shared/header-fields.js';
export type { HeaderTarget } from '../shared/header-fields.js';
export { addressLost } from '../handler/request.js';
export type { SocketLike } from '../handler/request.js';
export { BackgroundHooks } from './background.js';
export type { BackgroundHooksOptions, WaitUntil } from './background.js';
export { checkStackLayers, heldUntilEnd, releasingBody, runStackLayers } from './stack.js';
export type { EndingResponse, StackLayer, StackLayers, StackOutcome, StackRefusal } from './stack.js';
