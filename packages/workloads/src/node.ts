export {
  detectTraceFormatOf,
  type FindTracesDirOptions,
  findTracesDir,
  parseTraces,
  type ReadTracesStreamingOptions,
  readTraceFile,
  readTraces,
  readTracesStreaming,
  TRACES_DIR_ENV,
} from './readers/read-trace-file';
