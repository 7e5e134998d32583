/* flame.js — the flame graph: every thread's scopes aggregated by call
 * path (the names from the outermost scope in), width = total time, of
 * the whole capture or of a range; drawn top-down (callers above their
 * callees), children widest first. Click a frame to zoom into it, click
 * one of the frames above to zoom back out.
 *
 * In a range, a scope counts with the part of it inside the range. Async
 * spans are not calls and stay out. With --html-max-scopes the scopes
 * left out are missing from their parents' children (the parents' self
 * time then holds them). */

const FROW = 18;

class Flame {
  constructor(M, box, canvas, hooks) {
    this.M = M;
    this.box = box;
    this.canvas = canvas;
    this.hooks = hooks;
    this.ctx = canvas.getContext("2d");
    this.focus = 0;
    this.hover = -1;
    /* one id per distinct name */
    const ids = new Map();
    this.siteName = new Uint32Array(M.sites.length);
    this.names = [];
    this.nameSite = [];
    M.sites.forEach((s, i) => {
      let id = ids.get(s.name);
      if (id === undefined) {
        id = this.names.length;
        ids.set(s.name, id);
        this.names.push(s.name);
        this.nameSite.push(i);
      }
      this.siteName[i] = id;
    });
    this.listen();
  }

  /* Aggregates the scopes over [a, b] (null: everything). */
  compute(range) {
    const M = this.M, sp = M.spans, par = parents(M), NN = this.names.length + 1;
    const nodeOf = new Int32Array(sp.n).fill(-1);
    const parent = [-1], name = [-1], total = [0], count = [0], depth = [0];
    const key = new Map();
    const a = range ? range.a : -Infinity, b = range ? range.b : Infinity;
    for (const row of M.rows) {
      if (row.lane.kind !== LANE_THREAD) continue;
      for (let i = row.first, e = row.first + row.count; i < e; i++) {
        const s = Math.max(sp.start[i], a), en = Math.min(sp.end[i], b);
        if (en < s || (range && en === s && sp.end[i] !== sp.start[i])) continue;
        const up = par[i] >= 0 ? nodeOf[par[i]] : 0, p = up < 0 ? 0 : up;
        const k = p * NN + this.siteName[sp.site[i]];
        let node = key.get(k);
        if (node === undefined) {
          node = parent.length;
          key.set(k, node);
          parent.push(p);
          name.push(this.siteName[sp.site[i]]);
          total.push(0);
          count.push(0);
          depth.push(depth[p] + 1);
        }
        total[node] += en - s;
        count[node]++;
        nodeOf[i] = node;
      }
    }
    const n = parent.length, kids = Array.from({ length: n }, () => []);
    for (let i = 1; i < n; i++) kids[parent[i]].push(i);
    for (const c of kids[0]) total[0] += total[c];
    for (const k of kids) k.sort((x, y) => total[y] - total[x]);
    let maxDepth = 0;
    for (let i = 0; i < n; i++) if (depth[i] > maxDepth) maxDepth = depth[i];
    this.g = { parent, name, total, count, depth, kids, n, maxDepth };
    this.range = range;
    this.focus = 0;
    this.draw();
  }

  self(i) {
    const g = this.g;
    let s = g.total[i];
    for (const c of g.kids[i]) s -= g.total[c];
    return Math.max(0, s);
  }

  path(i) {
    const g = this.g, out = [];
    for (; i > 0; i = g.parent[i]) out.push(this.names[g.name[i]]);
    return out.reverse();
  }

  label(i) {
    return i === 0 ? (this.range ? "range " + fmtDur(this.range.b - this.range.a) : "all threads") : this.names[this.g.name[i]];
  }

  draw() {
    if (!this.g || !this.box.offsetParent) return;
    const g = this.g, ctx = this.ctx, dpr = window.devicePixelRatio || 1;
    const w = this.box.clientWidth, h = Math.max(this.box.clientHeight, (g.maxDepth + 2) * FROW + 8);
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.canvas.style.width = w + "px";
      this.canvas.style.height = h + "px";
    }
    const tl = this.hooks.timeline();
    const C = tl.C;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = C.bg;
    ctx.fillRect(0, 0, w, h);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    this.boxes = [];
    /* the focus's ancestors, full width */
    const chain = [];
    for (let i = this.focus; i >= 0; i = i === 0 ? -1 : g.parent[i]) chain.push(i);
    chain.reverse();
    chain.forEach((i, d) => this.frame(ctx, tl, i, 0, w, d * FROW, i !== this.focus));
    if (g.total[this.focus] > 0) this.layoutKids(ctx, tl, this.focus, 0, w, chain.length * FROW, w / g.total[this.focus]);
    if (g.n === 1) {
      ctx.fillStyle = C.dim;
      ctx.fillText(this.range ? "No scope in this range." : "No scopes in this capture.", 8, FROW * 1.5 + 4);
    }
  }

  layoutKids(ctx, tl, i, x, w, y, scale) {
    let cx = x;
    for (const c of this.g.kids[i]) {
      const cw = this.g.total[c] * scale;
      if (cw < 0.5) break; /* sorted widest first: the rest are narrower */
      this.frame(ctx, tl, c, cx, cw, y, false);
      if (y < this.canvas.height) this.layoutKids(ctx, tl, c, cx, cw, y + FROW, scale);
      cx += cw;
    }
  }

  frame(ctx, tl, i, x, w, y, ancestor) {
    const site = i === 0 ? -1 : this.nameSite[this.g.name[i]];
    ctx.fillStyle = i === 0 ? tl.C.lane : tl.fill[site];
    ctx.globalAlpha = ancestor ? 0.55 : 1;
    ctx.fillRect(x, y + 1, Math.max(1, w - (w > 3 ? 1 : 0)), FROW - 2);
    if (i === this.hover) {
      ctx.strokeStyle = tl.C.fg;
      ctx.strokeRect(x + 0.5, y + 1.5, Math.max(1, w - 1), FROW - 3);
    }
    if (w > 30) {
      ctx.fillStyle = i === 0 ? tl.C.fg : tl.ink[site];
      const pct = this.g.total[0] > 0 ? " " + (100 * this.g.total[i] / this.g.total[0]).toFixed(1) + "%" : "";
      const text = this.label(i) + "  " + fmtDur(this.g.total[i]) + pct;
      const t = tl.fitText(text, w - 8);
      if (t) ctx.fillText(t, x + 4, y + FROW / 2);
    }
    ctx.globalAlpha = 1;
    this.boxes.push({ i, x, w, y });
  }

  at(e) {
    const r = this.canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    if (!this.boxes) return -1;
    for (const b of this.boxes) if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + FROW) return b.i;
    return -1;
  }

  listen() {
    this.canvas.addEventListener("mousemove", e => {
      const i = this.at(e);
      if (i !== this.hover) {
        this.hover = i;
        this.draw();
      }
      this.hooks.onHover(i < 0 ? null : { kind: "flame", i, flame: this }, e.clientX, e.clientY);
    });
    this.canvas.addEventListener("mouseleave", () => {
      this.hover = -1;
      this.draw();
      this.hooks.onHover(null);
    });
    this.canvas.addEventListener("click", e => {
      const i = this.at(e);
      if (i < 0) return;
      this.focus = i;
      this.draw();
    });
    new ResizeObserver(() => this.draw()).observe(this.box);
  }
}
