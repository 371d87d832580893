/**
 * Setting names kept whole. The page lets long text break anywhere it must (a file path in a
 * narrow column: `overflow-wrap: anywhere`), which also splits `expandable_segments:True` into
 * `expandable_segments:T` and `rue`. Every run of text that names a setting (`word_word:` or
 * `WORD_WORD=`, as in `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True`)
 * is wrapped in a `.setting-text` span that breaks only after a comma, a colon or an equals sign
 * (a `<wbr>` after each; the style sheet keeps the span's words whole). Text is never changed:
 * a `<wbr>` adds none, so what is read or copied stays the same.
 *
 * A root is watched once made so, and what is drawn into it later is wrapped as it comes.
 */

/** A setting's key followed by its value (`expandable_segments:`, `PYTORCH_CUDA_ALLOC_CONF=`). */
const SETTING = /[A-Za-z0-9]_[A-Za-z0-9_]*[:=]/;
/** Elements whose text is not laid out as text, or is already wrapped. */
const SKIP = 'script, style, option, textarea, .setting-text';

/** The roots watched. */
const watched = new WeakSet<Node>();

/** Replaces the settings in text node `node` by spans that break only after `,`, `:` or `=`. */
function wrap(node: Text): void {
  const text = node.data;
  if (!SETTING.test(text) || node.parentElement?.closest(SKIP)) return;
  const parts: (Node | string)[] = [];
  let plain = '';
  for (const token of text.split(/(\s+)/)) {
    if (!SETTING.test(token)) {
      plain += token;
      continue;
    }
    if (plain !== '') parts.push(plain);
    plain = '';
    const span = document.createElement('span');
    span.className = 'setting-text';
    for (const piece of token.split(/(?<=[,:=])/)) {
      if (span.firstChild) span.append(document.createElement('wbr'));
      span.append(piece);
    }
    parts.push(span);
  }
  if (plain !== '') parts.push(plain);
  node.replaceWith(...parts);
}

/** Wraps the settings named in `root`'s text (see the module comment). */
function wrapAll(root: Node): void {
  if (root.nodeType === Node.TEXT_NODE) {
    wrap(root as Text);
    return;
  }
  if (root.nodeType !== Node.ELEMENT_NODE && root.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (SETTING.test((node as Text).data)) texts.push(node as Text);
  }
  for (const text of texts) wrap(text);
}

/**
 * Keeps the setting names in `root` whole, now and in whatever is drawn into it later (see the
 * module comment).
 */
export function keepSettingNamesWhole(root: HTMLElement): void {
  wrapAll(root);
  if (watched.has(root)) return;
  watched.add(root);
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === 'characterData') wrapAll(record.target);
      else for (const node of record.addedNodes) if (node.isConnected) wrapAll(node);
    }
  }).observe(root, { childList: true, subtree: true, characterData: true });
}
