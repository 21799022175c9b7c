import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';

/**
 * A real OpenTelemetry SDK pipeline whose export happens when the test asks: a MeterProvider whose periodic reader
 * never fires by itself (its interval is the longest timer there is), flushed on demand into an in-memory exporter.
 */
export function sdkPipeline(temporality: AggregationTemporality = AggregationTemporality.CUMULATIVE) {
  const exporter = new InMemoryMetricExporter(temporality);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 2 ** 31 - 1 });
  const provider = new MeterProvider({ readers: [reader] });
  /** Collects now and returns the data points of each instrument, by instrument name (none if nothing was exported). */
  const collect = async () => {
    const exported = exporter.getMetrics().length;
    await reader.forceFlush();
    // A collection with no data exports nothing: the last export is then an older one, not this collection's.
    const latest = exporter.getMetrics().length > exported ? exporter.getMetrics().at(-1) : undefined;
    const points = new Map<string, { unit: string; points: DataPoint<unknown>[] }>();
    for (const scope of latest?.scopeMetrics ?? []) {
      for (const metric of scope.metrics)
        points.set(metric.descriptor.name, { unit: metric.descriptor.unit, points: metric.dataPoints as DataPoint<unknown>[] });
    }
    return points;
  };
  /** The instrumentation scopes of the last export. */
  const scopes = () => (exporter.getMetrics().at(-1)?.scopeMetrics ?? []).map((scope) => scope.scope.name);
  return { provider, meter: provider.getMeter('sluice-test'), collect, scopes, shutdown: () => provider.shutdown() };
}

export const counterValue = (point: DataPoint<unknown>): number => point.value as number;
export const histogramCount = (point: DataPoint<unknown>): number => (point.value as Histogram).count;
