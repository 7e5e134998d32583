/* util.js — what every part of the page shares: time and number text,
 * colours, DOM elements built from text only, binary search.
 *
 * Nothing from a capture is ever parsed as HTML: elements are made with
 * el() and filled with textContent; the canvas draws with fillText. */

const NS = 1, US = 1e3, MS = 1e6, SEC = 1e9;

/* "812 ns", "12.3 µs", "4.56 ms", "1.23 s": three significant digits. */
function fmtDur(ns) {
  if (!isFinite(ns)) return "–";
  const a = Math.abs(ns);
  if (a < US) return (Math.round(ns * 10) / 10) + " ns";
  const [u, name] = a < MS ? [US, "µs"] : a < SEC ? [MS, "ms"] : [SEC, "s"];
  const v = ns / u;
  const d = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return v.toFixed(d) + " " + name;
}

/* A time on the ruler: in the unit of the time's own size (32.1 ms, not
 * 32100 µs), with just enough decimals to tell ticks `step` apart. */
function fmtTick(t, step) {
  const a = Math.max(Math.abs(t), step);
  const [u, name] = a < US ? [NS, "ns"] : a < MS ? [US, "µs"] : a < SEC ? [MS, "ms"] : [SEC, "s"];
  const dec = Math.max(0, Math.min(6, Math.ceil(-Math.log10(step / u) - 1e-9)));
  return (t / u).toFixed(dec) + " " + name;
}

/* An exact time after the origin: "+1.234 567 890 s". */
function fmtTime(ns) {
  const s = Math.floor(ns / SEC), rest = Math.round(ns - s * SEC);
  const r = String(rest).padStart(9, "0");
  return "+" + s + "." + r.slice(0, 3) + " " + r.slice(3, 6) + " " + r.slice(6) + " s";
}

/* 1234567 -> "1 234 567" (thin spaces do not wrap apart). */
function fmtCount(n) {
  if (!isFinite(n)) return "–";
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, "\u202f");
}

function clamp(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v; }

/* First index in [lo, hi) whose a[i] >= v (a sorted ascending). */
function lowerBound(a, lo, hi, v) {
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (a[m] < v) lo = m + 1; else hi = m;
  }
  return lo;
}

/* ---- colours ---- */

/* FNV-1a over the UTF-16 units: the same name gets the same colour in
 * every page. */
function hashText(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function hsl(h, s, l) {
  s /= 100; l /= 100;
  const k = n => (n + h / 30) % 12, a = s * Math.min(l, 1 - l);
  const f = n => l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1));
  return [Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255)];
}

/* A colour per name: hues spread by the hash, lightness by theme. */
function nameColor(name, dark) {
  const h = hashText(name);
  const hue = (h % 360);
  const sat = 50 + (h >>> 9) % 25;
  const light = dark ? 38 + (h >>> 17) % 14 : 62 + (h >>> 17) % 14;
  return hsl(hue, sat, light);
}

/* The colour of the k-th of several things sharing one name: the name's,
 * its hue turned by the golden angle k times, so that each differs. */
function nameColorNth(name, k, dark) {
  const h = hashText(name);
  const hue = ((h % 360) + k * 137.508) % 360;
  const sat = 50 + (h >>> 9) % 25;
  const light = dark ? 38 + (h >>> 17) % 14 : 62 + (h >>> 17) % 14;
  return hsl(hue, sat, light);
}

/* 0xRRGGBBAA as given by ..._WITH_COLOR. An alpha of 0 is taken as
 * opaque: a colour nobody could see is not what was meant. */
function givenColor(c) {
  const a = (c & 255) / 255;
  return [c >>> 24, (c >>> 16) & 255, (c >>> 8) & 255, a === 0 ? 1 : a];
}

function cssColor(rgb, alpha) {
  const a = alpha === undefined ? (rgb.length > 3 ? rgb[3] : 1) : alpha;
  return "rgba(" + rgb[0] + "," + rgb[1] + "," + rgb[2] + "," + a + ")";
}

function hexColor(c) {
  return "#" + (c >>> 0).toString(16).padStart(8, "0");
}

/* Black or white text, whichever reads better on rgb. */
function textOn(rgb) {
  const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const L = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
  return L > 0.23 ? "#111" : "#fff";
}

/* ---- DOM, from text only ---- */

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function clear(e) {
  while (e.firstChild) e.removeChild(e.firstChild);
}

function $(id) { return document.getElementById(id); }
