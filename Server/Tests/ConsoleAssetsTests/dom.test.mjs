// dom.mjs: attributes and text, never markup, on a document of the test's own (Node has none).

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';

// Just enough of the DOM for dom.mjs: elements with attributes, listeners and children, and text
// nodes, which hold their text as it is (nothing here parses markup, as nothing there may ask to).
class FakeNode {
  constructor(name, namespace = null) {
    this.name = name;
    this.namespace = namespace;
    this.attributes = new Map();
    this.listeners = [];
    this.children = [];
  }

  setAttribute(name, value) {
    assert.equal(typeof value, 'string', `${name} is set as text`);
    this.attributes.set(name, value);
  }

  addEventListener(event, handler) {
    this.listeners.push([event, handler]);
  }

  appendChild(child) {
    assert.ok(child instanceof FakeNode);
    this.children.push(child);
    return child;
  }
}

class FakeText extends FakeNode {
  constructor(text) {
    super('#text');
    this.text = text;
  }
}

const fakeDocument = {
  createElement: (tag) => new FakeNode(tag),
  createElementNS: (namespace, tag) => new FakeNode(tag, namespace),
  createTextNode: (text) => new FakeText(text),
};

const { el, svg } = await import('../../Sources/ReceiptKitServer/Console/Assets/dom.mjs');

describe('el and svg', () => {
  beforeEach(() => {
    globalThis.document = fakeDocument;
    globalThis.Node = FakeNode;
  });
  afterEach(() => {
    delete globalThis.document;
    delete globalThis.Node;
  });

  test('attributes as text: true as empty, false, null and undefined left out', () => {
    const node = el('input', { type: 'search', required: true, hidden: false, placeholder: null, title: undefined, tabindex: 0, width: 12.5 });
    assert.deepEqual([...node.attributes], [['type', 'search'], ['required', ''], ['tabindex', '0'], ['width', '12.5']]);
    assert.equal(node.namespace, null);
  });

  test('children: values as text nodes holding them as they are, nodes as they are, arrays flattened, nothing for null', () => {
    const inner = el('code', {}, 'id');
    const hostile = '<img src=x onerror="window.__pwned=1">';
    const node = el('p', null, 'Customer ', inner, [[hostile, null], [false, undefined, 0]], 42);
    assert.deepEqual(node.children.map((child) => (child instanceof FakeText ? ['text', child.text] : ['element', child.name])),
      [['text', 'Customer '], ['element', 'code'], ['text', hostile], ['text', '0'], ['text', '42']]);
    assert.equal(node.children[1], inner);
  });

  test('listeners only through `on`; an on… attribute, in any case, is refused', () => {
    const click = () => {};
    const node = el('button', { type: 'button', on: { click, keydown: click } });
    assert.deepEqual(node.listeners, [['click', click], ['keydown', click]]);
    assert.equal(node.attributes.size, 1);
    for (const name of ['onclick', 'onerror', 'ONLOAD', 'onMouseOver']) {
      assert.throws(() => el('img', { [name]: 'alert(1)' }), /no event handler attributes/, name);
    }
  });

  test('svg makes elements in the SVG namespace', () => {
    const node = svg('rect', { x: 1.5, y: 18, 'data-kind': 'period' }, svg('title', {}, 'label'));
    assert.equal(node.namespace, 'http://www.w3.org/2000/svg');
    assert.deepEqual([...node.attributes], [['x', '1.5'], ['y', '18'], ['data-kind', 'period']]);
    assert.equal(node.children[0].namespace, 'http://www.w3.org/2000/svg');
  });
});
