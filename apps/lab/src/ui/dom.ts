/**
 * Elements for the report and the web app, built with the DOM rather than from HTML text: text is
 * never parsed, so nothing needs escaping.
 */

/**
 * An element with attributes and children (strings become text). A `style` is set through the
 * CSSOM, which a content security policy without `'unsafe-inline'` allows.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, string>> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'style') element.style.cssText = value;
    else element.setAttribute(name, value);
  }
  element.append(...children);
  return element;
}

/** An SVG element with attributes and children, as {@link h} makes an HTML one. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, string | number>> = {},
  ...children: (Node | string)[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** `parts` with a line break between each two. */
export function lines(parts: readonly (Node | string)[]): (Node | string)[] {
  return parts.flatMap((part, i) => (i === 0 ? [part] : [document.createElement('br'), part]));
}

/** The element with `id`; throws when the page lacks it. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}
