export {
  type MetricsHttpServer,
  type MetricsServer,
  type ServeMetricsOptions,
  serveMetrics,
} from './serve-metrics';
