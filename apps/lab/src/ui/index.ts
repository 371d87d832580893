/**
 * `@allot/lab/ui`: the report's client modules for a page that draws the report itself (the web
 * app), the live page of a running job (`serve --watch`), the rows of a job's table of ranks (a
 * job's page and the web app's job panel), and the one formatter of figures.
 */
export {
  formatBytes,
  formatChange,
  formatCount,
  formatPercent,
  formatSeconds,
  formatTickBytes,
  formatTickSeconds,
  settingName,
} from '../units';
export { byId, h } from './dom';
export { LiveStateError, liveState } from './live-check';
export type * from './live-data';
export { type LiveConnection, LivePage } from './live-page';
export { type RankCell, type RankRow, rankRows } from './rank-table';
export { clearSections, type RenderOptions, renderSections } from './render-sections';
export type * from './report-data';
export { keepSettingNamesWhole } from './setting-names';
export { type StackTreeViewOptions, stackTreeView } from './stack-tree-view';
export { type RowBrief, type TraceBrief, traceBrief } from './what-if-figures';
