// Building elements: the one way the console puts anything on the page. Attribute names come
// from the console's own code; every value, the API's included, goes in as an attribute value
// or a text node, never parsed as markup, so a customer id or a product id cannot become
// code. Tested by Server/Tests/ConsoleAssetsTests/dom.test.mjs.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Sets an element's attributes and appends its children.
 * @param {Element} node
 * @param {Record<string, unknown> | null | undefined} props Attributes (`true` writes an empty
 *   value; `null`, `undefined` and `false` write none), and `on`: event name to listener.
 * @param {unknown[]} children Nodes, or values appended as text; arrays are flattened, `null`,
 *   `undefined` and `false` left out.
 * @returns {Element} The node.
 * @throws {Error} For an `on…` attribute: handlers are listeners, never markup.
 */
function build(node, props, children) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'on') {
      for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    } else if (/^on/i.test(name)) {
      throw new Error('no event handler attributes');
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * An HTML element: `el('td', { class: 'mono' }, productId)`.
 * @param {string} tag
 * @param {Record<string, unknown> | null} [props]
 * @param {...unknown} children
 * @returns {HTMLElement}
 */
export const el = (tag, props, ...children) => build(document.createElement(tag), props, children);

/**
 * An SVG element: `svg('rect', { x, y, width, height })`.
 * @param {string} tag
 * @param {Record<string, unknown> | null} [props]
 * @param {...unknown} children
 * @returns {SVGElement}
 */
export const svg = (tag, props, ...children) => build(document.createElementNS(SVG_NS, tag), props, children);
