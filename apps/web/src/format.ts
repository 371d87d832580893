/** Figures as the lab's tables write them: `13.6 GiB`, `12,345`, `+4.3 %`. */
import { formatBytes as binary } from '@allot/core';

/** `1.50 GiB`, `512 B`: three significant figures in the largest binary unit that fits. */
export function formatBytes(bytes: number): string {
  return binary(bytes, { significantFigures: 3 });
}

/** `12,345` */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** `+4.3 %`, `−0.2 %`, from a fraction. */
export function formatChange(fraction: number): string {
  const text = `${Math.abs(fraction * 100).toFixed(1)} %`;
  return fraction > 0 ? `+${text}` : fraction < 0 ? `−${text}` : text;
}

/** A setting as people read it: the string, or PyTorch's defaults for the empty one. */
export function settingName(config: string): string {
  return config === '' ? "PyTorch's defaults" : config;
}

/** An element with a class and children (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/** The element with `id`; throws when the page lacks it. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}
