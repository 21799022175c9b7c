// Everything this package takes from @sluice/http comes in through this one file.
export {
  applyHeaders,
  createHandler,
  matchDenyList,
  type DeniedEvent,
  type ErrorEvent,
  type HandleResult,
  type HttpLimitOptions,
  type HttpRequest,
  type LimitedEvent,
  type LimiterEntry,
  type Outcome,
} from '@sluice/http';
export {
  BackgroundHooks,
  checkOptionsObject,
  checkStackLayers,
  heldUntilEnd,
  releasingBody,
  runStackLayers,
  type StackLayer,
  type StackLayers,
  type WaitUntil,
} from '@sluice/http/adapter';
