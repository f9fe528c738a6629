// svg_zoom.js - runs the inline script of a proffs flamegraph.svg against a
// minimal DOM built from the file (node, no packages), then checks the
// interactions: hover shows the frame's title (name, count, share), a click
// zooms the frame to full width and hides what is outside it, a click on
// the background resets. Usage: node svg_zoom.js FILE.svg. Exit 0 = pass.
'use strict';
const fs = require('fs');
const src = fs.readFileSync(process.argv[2], 'utf8');
let fails = 0;
function check(c, msg) { console.log((c ? 'ok   ' : 'FAIL ') + msg); if (!c) fails++; }
function unesc(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}
class El {
  constructor(tag, attrs, parent) {
    this.tag = tag; this.attrs = attrs || {}; this.parentNode = parent || null;
    this.children = []; this.style = {}; this.textContent = ''; this.listeners = {};
    if (parent) parent.children.push(this);
  }
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getElementsByTagName(t) {
    const out = [];
    const walk = (e) => { for (const c of e.children) { if (c.tag === t) out.push(c); walk(c); } };
    walk(this); return out;
  }
  addEventListener(ev, fn) { this.listeners[ev] = fn; }
}
const root = new El('svg', {});
const byId = {};
// Top-level text elements with ids.
for (const m of src.matchAll(/<text id="(\w+)"[^>]*>([^<]*)<\/text>/g)) {
  byId[m[1]] = new El('text', { id: m[1] }, root); byId[m[1]].textContent = unesc(m[2]);
}
const frames = [];
for (const m of src.matchAll(/<g class="f" data-n="([^"]*)"><title>([^<]*)<\/title><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"[^>]*\/><text[^>]*>([^<]*)<\/text><\/g>/g)) {
  const g = new El('g', { class: 'f', 'data-n': unesc(m[1]) }, root);
  const t = new El('title', {}, g); t.textContent = unesc(m[2]);
  new El('rect', { x: m[3], y: m[4], width: m[5] }, g);
  const tx = new El('text', {}, g); tx.textContent = unesc(m[6]);
  frames.push(g);
}
check(frames.length > 0, `parsed ${frames.length} frames`);
const script = (src.match(/<!\[CDATA\[([\s\S]*?)\]\]>/) || [])[1];
check(!!script, 'inline script present');
global.document = { documentElement: root, getElementsByTagName: (t) => root.getElementsByTagName(t),
  getElementById: (id) => byId[id] };
new Function(script)();
const R = (g) => g.getElementsByTagName('rect')[0];
const X = (g) => +R(g).getAttribute('x'), W = (g) => +R(g).getAttribute('width'), Y = (g) => +R(g).getAttribute('y');
const hidden = (g) => g.style.display === 'none';
// Hover.
const heavy = frames.filter((g) => Y(g) < Y(frames[0])).sort((a, b) => W(b) - W(a))[0] || frames[0];
root.listeners.mouseover({ target: R(heavy) });
check(byId.details.textContent === heavy.getElementsByTagName('title')[0].textContent &&
  /\(\d+ [a-z]+, [\d.]+%\)|A -?\d+, B -?\d+ [a-z]+/.test(byId.details.textContent),
  `hover shows name, count, share: "${byId.details.textContent}"`);
// Zoom into a frame that is neither the root nor full width, if any.
const z = frames.find((g) => W(g) < 1100 && W(g) > 5 && Y(g) < Y(frames[0])) || heavy;
const zx = X(z), zw = W(z), zy = Y(z);
const inside = frames.filter((g) => Y(g) < zy && X(g) >= zx - 1e-3 && X(g) + W(g) <= zx + zw + 1e-3);
const outside = frames.filter((g) => Y(g) <= zy && g !== z && (X(g) + W(g) <= zx + 1e-3 || X(g) >= zx + zw - 1e-3));
root.listeners.click({ target: R(z) });
check(Math.abs(X(z) - 10) < 0.01 && Math.abs(W(z) - 1180) < 0.01, `click zooms "${z.getAttribute('data-n')}" to full width`);
check(inside.every((g) => !hidden(g)) && outside.every(hidden),
  `zoom keeps ${inside.length} frames above it, hides ${outside.length} beside it`);
check(!hidden(frames[0]) && frames[0].style.opacity == 0.5, 'the root stays as a faded ancestor');
check(byId.reset.style.opacity === 1, 'reset becomes active');
// Reset by clicking the background.
root.listeners.click({ target: root });
check(frames.every((g) => !hidden(g)) && Math.abs(X(z) - zx) < 0.01 && Math.abs(W(z) - zw) < 0.01,
  'a click on the background resets every frame');
process.exit(fails ? 1 : 0);
