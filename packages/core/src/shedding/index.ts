// `@sluice/core/shedding`: the load shedders, which refuse work by priority class when the process is busy
// (createUtilizationShedder, fed by createEventLoopSignal or any other signal) or when the fleet is near its capacity
// (createFleetShedder), with the types of their options, decisions and events.
export { createUtilizationShedder } from './utilization-shedder.js';
export { createEventLoopSignal } from './event-loop-signal.js';
export type { EventLoopSignal, EventLoopSignalOptions } from './event-loop-signal.js';
export type { ShedDecision, ShedEvent, UtilizationShedder, UtilizationShedderOptions } from './utilization-shedder.js';
export { createFleetShedder } from './fleet-shedder.js';
export type { FleetDecision, FleetEvent, FleetShedder, FleetShedderOptions } from './fleet-shedder.js';
