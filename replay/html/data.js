/* data.js — the page's data block back into typed arrays.
 *
 * The block is base64 (written by replay/html/replay_export_html_data.c, whose
 * opening comment is the format): "ORBITPG1", then tables of typed
 * columns, every column 8-byte aligned, so each one is a view of the
 * decoded bytes, never a copy. Texts are indices into the string table
 * (STRO offsets, STRB bytes), decoded when first asked for. */

const COLUMN_TYPES = {
  66: [1, Uint8Array],    /* 'B' */
  72: [2, Uint16Array],   /* 'H' */
  73: [4, Uint32Array],   /* 'I' */
  100: [8, Float64Array], /* 'd' */
};
const NO_STR = 0xffffffff;

/* Both decoders skip the block's line breaks (forgiving base64). */
function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function tag4(bytes, at) {
  return String.fromCharCode(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]).trim();
}

/* { TAG: { rows, cols: { name: TypedArray } } } */
function readTables(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = String.fromCharCode.apply(null, bytes.subarray(0, 8));
  if (magic !== "ORBITPG1") throw new Error("not an Orbit page data block");
  const ntables = dv.getUint32(8, true);
  const tables = {};
  let at = 16;
  for (let t = 0; t < ntables; t++) {
    const tag = tag4(bytes, at), rows = dv.getUint32(at + 4, true), ncols = dv.getUint32(at + 8, true);
    at += 16;
    const cols = {};
    for (let c = 0; c < ncols; c++) {
      const name = tag4(bytes, at), type = COLUMN_TYPES[bytes[at + 4]];
      if (!type) throw new Error("column " + tag + "." + name + ": unknown type");
      at += 8;
      const len = rows * type[0];
      if (at + len > bytes.byteLength) throw new Error("table " + tag + " is cut short");
      cols[name] = new type[1](bytes.buffer, bytes.byteOffset + at, rows);
      at += Math.ceil(len / 8) * 8;
    }
    tables[tag] = { rows, cols };
  }
  return tables;
}

class Strings {
  constructor(off, bytes) {
    this.off = off;
    this.bytes = bytes;
    this.cache = new Array(Math.max(0, off.length - 1));
    this.dec = new TextDecoder("utf-8", { fatal: false });
  }
  get(i) {
    if (i === NO_STR || i === undefined || i >= this.cache.length) return null;
    let s = this.cache[i];
    if (s === undefined) {
      s = this.dec.decode(this.bytes.subarray(this.off[i], this.off[i + 1]));
      this.cache[i] = s;
    }
    return s;
  }
}

/* The data of the page: its tables, strings and META as a Map. */
function loadData() {
  const node = $("orbit-data");
  const text = node.textContent;
  node.textContent = ""; /* the text is a copy nobody needs */
  return readData(text);
}

/* A data block's base64 text (the page's own, or one the live view sent)
 * as its tables, strings and META. */
function readData(text) {
  const bytes = decodeBase64(text);
  const tables = readTables(bytes);
  const empty = { rows: 0, cols: {} };
  const tab = tag => tables[tag] || empty;
  const strings = new Strings(tab("STRO").cols.off || new Uint32Array(1), tab("STRB").cols.byte || new Uint8Array(0));
  const meta = new Map();
  const m = tab("META");
  for (let i = 0; i < m.rows; i++)
    meta.set(strings.get(m.cols.k[i]), { s: strings.get(m.cols.s[i]), v: m.cols.v[i] });
  return { tab, strings, meta, bytes: bytes.byteLength };
}
