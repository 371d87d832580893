export {
  detectTraceFormatOf,
  type FindTracesDirOptions,
  findTracesDir,
  type ReadTracesOptions,
  readTraces,
  TRACES_DIR_ENV,
} from './readers/node-traces';
