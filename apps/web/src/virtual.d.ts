/** The worker's bundle, as text (build.mjs makes it, and the page starts the worker from a blob). */
declare module 'virtual:worker' {
  const source: string;
  export default source;
}
