// Everything this package takes from @sluice/http comes in through this one file.
export { applyHeaders, checkOptionsObject, createHandler, checkStackLayers, releasingBody, runStackLayers, throttledWarning, type StackLayer, type StackLayers, type ErrorEvent, type HandleResult, type HttpLimitOptions, type HttpRequest, type LimitedEvent, type LimiterEntry, type Outcome } from '@sluice/http';
