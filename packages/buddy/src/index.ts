export { type Buddy, type BuddyFactory, type BuddyStats, buddy } from './buddy';
export { type BuddyOptions, buddyStateBytes } from './config';
export {
  HEADER_BYTES as BUDDY_HEADER_BYTES,
  WORD_LOCK as BUDDY_LOCK_WORD,
} from './state-layout';
