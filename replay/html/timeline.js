/* timeline.js — the timeline: one group per process, in it one lane per
 * thread (its log lines, its scopes as a flame chart by depth), the
 * process's async spans, its value tracks; drawn on one canvas with level
 * of detail, navigated like Tracy or Perfetto (wheel and W/S zoom, drag
 * and A/D pan, a ruler with sensible units).
 *
 * A lane is a stack of tracks, each of a kind in TRACKS: its height, how
 * it draws and what is under the mouse. A thread lane is
 *
 *   logs     log lines and markers, when the thread has any
 *   spans    its scopes, one row per depth
 *   merged   where --html-max-scopes left scopes out, when it did
 *   state    on-CPU / runnable / blocked, when the capture has the
 *            kernel's scheduling (THST)
 *
 * and under the process header, before its lanes, one CPU track per CPU
 * its threads ran on (CPUS): which of its threads ran there,
 * in each thread's colour (see "Adding a track" below).
 *
 * Level of detail: a row's spans are sorted by start, so the visible ones
 * are found by binary search; spans narrower than MIN_PX are drawn merged
 * into runs, and a run jumps to the next span starting a pixel later by
 * binary search again: the cost of a frame follows the pixels, not the
 * spans. */

const RULER_H = 28, GUTTER_W = 200, ROW_H = 18, PROC_H = 26, LOG_H = 12, VALUE_H = 44;
const MERGED_H = 6, STATE_H = 12, CPU_H = 14, LANE_GAP = 7, MIN_PX = 2.5, FONT = "11px system-ui, sans-serif";
const MIN_SPAN_NS = 20;

/* Thread states (replay_sched.h's enum orbit__rp_sched_state). */
const STATE_NAMES = ["unknown", "on-CPU", "runnable", "blocked", "dead"]; /* every output's words */
const STATE_COLORS = ["#9aa0a6", "#2da44e", "#e3a008", "#8c959f", "rgba(0,0,0,0)"];
const STATE_D_COLOR = "#8250df"; /* blocked uninterruptibly (D): often I/O */

/* ---- tracks ---- */

const TRACKS = {
  proc: {
    height: () => PROC_H,
    draw: (tl, ctx, tr, y) => tl.drawProc(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitProc(tr, x, y),
  },
  logs: {
    height: () => LOG_H,
    draw: (tl, ctx, tr, y) => tl.drawLogs(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitLogs(tr, x, y),
  },
  spans: {
    height: tr => Math.max(1, tr.lane.depths) * ROW_H,
    draw: (tl, ctx, tr, y) => tl.drawSpans(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitSpans(tr, x, y),
  },
  merged: {
    height: () => MERGED_H,
    draw: (tl, ctx, tr, y) => tl.drawMerged(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitMerged(tr, x, y),
  },
  state: {
    height: () => STATE_H,
    draw: (tl, ctx, tr, y) => tl.drawStates(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitStates(tr, x, y),
  },
  cpu: {
    height: () => CPU_H,
    draw: (tl, ctx, tr, y) => tl.drawCpu(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitCpu(tr, x, y),
  },
  values: {
    height: () => VALUE_H,
    draw: (tl, ctx, tr, y) => tl.drawValues(ctx, tr, y),
    hit: (tl, tr, x, y) => tl.hitValues(tr, x, y),
  },
};

/* Adding a track: an entry above, and in layoutLane a push of
 * { kind, lane, proc } where it belongs; its draw gets the track's top y
 * on the canvas, tl.x(t) / tl.t(x) convert times, and hit returns what
 * the tooltip (page.js, describe) shows. */

/* A nice step for ticks at least minNs apart: 1, 2, 5 times a power of ten. */
function niceStep(minNs) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(minNs, 1e-3))));
  for (const m of [1, 2, 5, 10]) if (m * p >= minNs) return m * p;
  return 10 * p;
}

class Timeline {
  constructor(M, box, canvas, spacer, hooks) {
    this.M = M;
    this.box = box;
    this.canvas = canvas;
    this.spacer = spacer;
    this.hooks = hooks;
    this.ctx = canvas.getContext("2d", { alpha: false });
    this.t0 = 0;
    this.t1 = Math.max(M.end, 1000);
    this.selected = -1;
    this.range = null;
    this.match = null; /* Uint8Array over sites: highlighted names, or null */
    this.found = null; /* the highlighted spans, in start order */
    this.mouse = null;
    this.hoverHit = null;
    this.held = new Set();
    this.dirty = false;
    this.widthCache = new Map();
    this.theme();
    this.layout();
    this.listen();
    this.resize();
    this.fit();
  }

  /* ---- geometry ---- */

  get W() { return Math.max(10, this.cw - GUTTER_W); }
  x(t) { return GUTTER_W + (t - this.t0) / (this.t1 - this.t0) * this.W; }
  t(x) { return this.t0 + (x - GUTTER_W) / this.W * (this.t1 - this.t0); }
  nsPerPx() { return (this.t1 - this.t0) / this.W; }

  layout() {
    const tracks = [];
    let y = RULER_H;
    const push = tr => {
      tr.y = y;
      tr.h = TRACKS[tr.kind].height(tr);
      y += tr.h;
      tracks.push(tr);
      return tr;
    };
    this.laneTrack = new Map(); /* lane index -> its spans track */
    for (const p of this.M.procs) {
      push({ kind: "proc", proc: p, lane: null });
      p.top = y;
      if (!p.collapsed && p.cpus.length) {
        for (const c of p.cpus) {
          const tr = push({ kind: "cpu", lane: c, proc: p });
          tr.labelled = true;
          tr.laneTop = tr.y;
          tr.laneBottom = y;
        }
        y += LANE_GAP;
      }
      if (!p.collapsed)
        for (const lane of p.lanes) {
          const first = tracks.length;
          this.layoutLane(lane, p, push);
          if (tracks.length > first) {
            tracks[first].labelled = true;
            tracks[first].laneTop = tracks[first].y;
            tracks[first].laneBottom = y;
            y += LANE_GAP;
          }
        }
      p.bottom = y;
    }
    this.tracks = tracks;
    this.contentH = y + 8;
  }

  layoutLane(lane, p, push) {
    if (lane.kind === LANE_VALUE) {
      if (lane.values) push({ kind: "values", lane, proc: p });
      return;
    }
    if (lane.logs) push({ kind: "logs", lane, proc: p });
    if (lane.depths > 0 || lane.kind === LANE_ASYNC) this.laneTrack.set(lane.index, push({ kind: "spans", lane, proc: p }));
    if (lane.merged > 0) push({ kind: "merged", lane, proc: p });
    if (lane.states) push({ kind: "state", lane, proc: p });
  }

  trackAt(y) {
    const tr = this.tracks;
    let lo = 0, hi = tr.length;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (tr[m].y + tr[m].h <= y) lo = m + 1; else hi = m;
    }
    return lo < tr.length && tr[lo].y <= y ? tr[lo] : null;
  }

  /* ---- view ---- */

  setView(t0, t1, quiet) {
    const ext = Math.max(this.M.end, 1000), pad = ext * 0.05;
    let span = clamp(t1 - t0, MIN_SPAN_NS, ext + 2 * pad);
    t0 = clamp(t0, -pad, ext + pad - span);
    this.t0 = t0;
    this.t1 = t0 + span;
    this.redraw();
    if (!quiet && this.hooks.onView) this.hooks.onView(this.t0, this.t1);
  }

  fit() {
    const ext = Math.max(this.M.end, 1000);
    this.setView(-ext * 0.01, ext * 1.01);
  }

  zoomAt(tm, factor) {
    this.setView(tm - (tm - this.t0) * factor, tm + (this.t1 - tm) * factor);
  }

  pan(fraction) {
    const d = (this.t1 - this.t0) * fraction;
    this.setView(this.t0 + d, this.t1 + d);
  }

  /* Shows [a, b] with a margin, and the lane of span i (if any) on screen. */
  show(a, b, i) {
    const d = Math.max(b - a, MIN_SPAN_NS * 4);
    this.setView(a - d * 0.15, b + d * 0.15);
    if (i !== undefined && i >= 0) this.scrollTo(i);
  }

  scrollTo(i) {
    const row = this.M.spans.rowOf(i), lane = row.lane;
    if (lane.proc.collapsed) { lane.proc.collapsed = false; this.relayout(); }
    const tr = this.laneTrack.get(lane.index);
    if (!tr) return;
    const y = tr.y + row.depth * ROW_H, top = this.box.scrollTop, h = this.ch;
    if (y < top + RULER_H + 4 || y + ROW_H > top + h - 4) this.box.scrollTop = Math.max(0, y - h / 3);
  }

  select(i) {
    this.selected = i;
    this.redraw();
    if (this.hooks.onSelect) this.hooks.onSelect(i);
  }

  setRange(r) {
    this.range = r && r.b - r.a > 0 ? r : null;
    this.redraw();
    if (this.hooks.onRange) this.hooks.onRange(this.range);
  }

  highlight(match, found) {
    this.match = match;
    this.found = found;
    this.redraw();
  }

  relayout() {
    this.layout();
    this.resize();
  }

  /* ---- theme ---- */

  theme() {
    const cs = getComputedStyle(document.documentElement);
    const v = n => cs.getPropertyValue(n).trim();
    this.C = {
      bg: v("--bg"), fg: v("--fg"), dim: v("--dim"), grid: v("--grid"), gutter: v("--gutter"),
      proc: v("--proc"), accent: v("--accent"), loss: v("--loss"), merged: v("--merged"),
      ruler: v("--ruler"), log: v("--log"), marker: v("--marker"), value: v("--value"),
      sel: v("--sel"), lane: v("--lane"), border: v("--border"),
    };
    this.dark = v("--dark") === "1";
    const sites = this.M.sites;
    this.fill = new Array(sites.length);
    this.ink = new Array(sites.length);
    for (let s = 0; s < sites.length; s++) {
      const rgb = sites[s].color || nameColor(sites[s].name, this.dark);
      this.fill[s] = cssColor(rgb);
      this.ink[s] = textOn(rgb);
    }
    this.redraw();
  }

  /* Widths by font and text: drawing names costs one measure each. */
  textWidth(s) {
    const key = this.ctx.font + "\u0000" + s;
    let w = this.widthCache.get(key);
    if (w === undefined) {
      w = this.ctx.measureText(s).width;
      if (this.widthCache.size > 20000) this.widthCache.clear();
      this.widthCache.set(key, w);
    }
    return w;
  }

  /* s cut to fit w pixels, with an ellipsis; "" when nothing fits. */
  fitText(s, w) {
    if (w < 8) return "";
    const full = this.textWidth(s);
    if (full <= w) return s;
    let n = Math.floor(s.length * (w - 8) / full);
    while (n > 0 && this.ctx.measureText(s.slice(0, n) + "…").width > w) n--;
    return n > 0 ? s.slice(0, n) + "…" : "";
  }

  /* ---- drawing ---- */

  redraw() {
    if (this.dirty) return;
    this.dirty = true;
    requestAnimationFrame(() => {
      this.dirty = false;
      this.draw();
    });
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = this.box.clientWidth, h = this.box.clientHeight;
    this.cw = w;
    this.ch = h;
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.canvas.style.width = w + "px";
      this.canvas.style.height = h + "px";
    }
    this.spacer.style.height = Math.max(0, this.contentH - h) + "px";
    this.dpr = dpr;
    this.redraw();
  }

  draw() {
    const ctx = this.ctx, C = this.C, w = this.cw, h = this.ch;
    const top = this.box.scrollTop;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    ctx.fillStyle = C.bg;
    ctx.fillRect(0, 0, w, h);
    this.drawGrid(ctx, h);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, RULER_H, w - GUTTER_W, h - RULER_H);
    ctx.clip();
    for (const tr of this.visibleTracks(top, h)) {
      if (tr.kind === "proc") continue;
      TRACKS[tr.kind].draw(this, ctx, tr, tr.y - top);
    }
    this.drawLossBands(ctx, top, h);
    this.drawFound(ctx, top, h);
    this.drawRange(ctx, h);
    this.drawHoverLine(ctx, h);
    ctx.restore();
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, RULER_H, w, h - RULER_H);
    ctx.clip();
    this.drawGutter(ctx, top, h);
    for (const tr of this.visibleTracks(top, h)) if (tr.kind === "proc") this.drawProc(ctx, tr, tr.y - top);
    ctx.restore();
    this.drawRuler(ctx, w);
    if (this.hooks.onDraw) this.hooks.onDraw();
  }

  *visibleTracks(top, h) {
    for (const tr of this.tracks) {
      const y = tr.y - top;
      if (y + tr.h < RULER_H) continue;
      if (y > h) break;
      yield tr;
    }
  }

  ticks() {
    const step = niceStep(this.nsPerPx() * 110);
    const out = [];
    for (let t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) out.push(t);
    return { step, out };
  }

  drawGrid(ctx, h) {
    const { out } = this.ticks();
    ctx.fillStyle = this.C.grid;
    for (const t of out) {
      const x = Math.round(this.x(t));
      if (x >= GUTTER_W) ctx.fillRect(x, RULER_H, 1, h - RULER_H);
    }
  }

  drawRuler(ctx, w) {
    const C = this.C, { step, out } = this.ticks();
    ctx.fillStyle = C.ruler;
    ctx.fillRect(0, 0, w, RULER_H);
    ctx.fillStyle = C.border;
    ctx.fillRect(0, RULER_H - 1, w, 1);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, 0, w - GUTTER_W, RULER_H);
    ctx.clip();
    ctx.fillStyle = C.dim;
    const minor = step / 5;
    for (let t = Math.ceil(this.t0 / minor) * minor; t <= this.t1; t += minor) {
      const x = Math.round(this.x(t));
      ctx.fillRect(x, RULER_H - 5, 1, 4);
    }
    ctx.fillStyle = C.fg;
    ctx.textAlign = "left";
    for (const t of out) {
      const x = Math.round(this.x(t));
      ctx.fillRect(x, RULER_H - 12, 1, 11);
      ctx.fillText(fmtTick(t, step), x + 4, 10);
    }
    if (this.range) {
      const a = this.x(this.range.a), b = this.x(this.range.b);
      ctx.fillStyle = C.sel;
      ctx.fillRect(a, 0, Math.max(1, b - a), RULER_H);
      ctx.fillStyle = C.fg;
      ctx.textAlign = "center";
      ctx.fillText(fmtDur(this.range.b - this.range.a), (a + b) / 2, 20);
    }
    if (this.mouse && this.mouse.x > GUTTER_W) {
      const t = this.t(this.mouse.x), label = fmtTick(t, step / 1000);
      const tw = ctx.measureText(label).width + 10;
      const x = clamp(this.mouse.x - tw / 2, GUTTER_W, w - tw);
      ctx.fillStyle = C.accent;
      ctx.fillRect(x, RULER_H - 14, tw, 13);
      ctx.fillStyle = "#fff";
      ctx.textAlign = "center";
      ctx.fillText(label, x + tw / 2, RULER_H - 7);
    }
    ctx.restore();
    ctx.textAlign = "left";
    ctx.fillStyle = C.dim;
    ctx.fillText("view " + fmtDur(this.t1 - this.t0), 10, 10);
    ctx.fillText("from " + fmtTick(this.t0, step / 100), 10, 21);
  }

  drawGutter(ctx, top, h) {
    const C = this.C;
    ctx.fillStyle = C.gutter;
    ctx.fillRect(0, RULER_H, GUTTER_W, h - RULER_H);
    ctx.fillStyle = C.border;
    ctx.fillRect(GUTTER_W - 1, RULER_H, 1, h - RULER_H);
    for (const tr of this.visibleTracks(top, h)) {
      if (!tr.labelled) continue;
      const lane = tr.lane, y = tr.laneTop - top;
      let title, sub;
      if (lane.kind === LANE_THREAD) {
        title = lane.name !== null ? lane.name : "thread " + lane.tid;
        sub = "tid " + lane.tid;
      } else if (lane.kind === LANE_ASYNC) {
        title = "async spans";
        sub = "pid " + lane.proc.pid;
      } else if (lane.kind === LANE_CPU) {
        title = "CPU " + lane.cpu;
        sub = "its threads";
      } else {
        title = lane.name !== null ? lane.name : "value";
        sub = "value";
      }
      const hgt = tr.laneBottom - tr.laneTop;
      ctx.fillStyle = C.lane;
      ctx.fillRect(0, y, GUTTER_W - 1, hgt);
      ctx.fillStyle = C.fg;
      ctx.font = "600 " + FONT;
      if (hgt >= 30) {
        ctx.fillText(this.fitText(title, GUTTER_W - 24), 16, y + 9);
        ctx.font = FONT;
        ctx.fillStyle = C.dim;
        ctx.fillText(sub, 16, y + 22);
      } else {
        /* one row: the title, then what it is, on one line */
        const t = this.fitText(title, GUTTER_W - 24 - 40);
        ctx.fillText(t, 16, y + 9);
        const x = 16 + ctx.measureText(t).width + 8;
        ctx.font = FONT;
        ctx.fillStyle = C.dim;
        ctx.fillText(this.fitText(sub, GUTTER_W - 8 - x), x, y + 9);
      }
    }
  }

  drawProc(ctx, tr, y) {
    const C = this.C, p = tr.proc, w = this.cw;
    ctx.fillStyle = C.proc;
    ctx.fillRect(0, y, w, PROC_H);
    ctx.fillStyle = C.border;
    ctx.fillRect(0, y + PROC_H - 1, w, 1);
    /* its name and pid in the gutter; host, command line: the tooltip */
    ctx.fillStyle = C.fg;
    ctx.font = "600 12px system-ui, sans-serif";
    const pid = "pid " + p.pid;
    ctx.font = FONT;
    const pw = ctx.measureText(pid).width;
    ctx.font = "600 12px system-ui, sans-serif";
    const name = (p.collapsed ? "▸ " : "▾ ") + (p.name !== null ? p.name : "process");
    const head = this.fitText(name, GUTTER_W - 22 - pw);
    ctx.fillText(head, 6, y + PROC_H / 2);
    const hw = this.textWidth(head);
    ctx.font = FONT;
    ctx.fillStyle = C.dim;
    ctx.fillText(pid, Math.min(6 + hw + 8, GUTTER_W - 8 - pw), y + PROC_H / 2);
    /* loss marks, on the process: a ring holds several threads' records */
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, y, w - GUTTER_W, PROC_H);
    ctx.clip();
    for (const m of p.loss) {
      if (m.to < this.t0 || m.from > this.t1) continue;
      const a = this.x(m.from), b = Math.max(this.x(m.to), a + 3);
      ctx.fillStyle = C.loss;
      ctx.fillRect(a, y + 3, b - a, PROC_H - 7);
      const label = "⚠ " + fmtCount(m.count) + " lost";
      if (b - a > this.textWidth(label) + 8) {
        ctx.fillStyle = "#fff";
        ctx.fillText(label, a + 4, y + PROC_H / 2);
      } else {
        ctx.fillStyle = C.loss;
        ctx.fillText(label, b + 3, y + PROC_H / 2);
      }
    }
    ctx.restore();
  }

  drawLossBands(ctx, top, h) {
    ctx.fillStyle = this.C.loss;
    ctx.globalAlpha = 0.12;
    for (const p of this.M.procs) {
      if (p.collapsed || !p.loss.length) continue;
      const y0 = Math.max(RULER_H, p.top - top), y1 = Math.min(h, p.bottom - top);
      if (y1 <= y0) continue;
      for (const m of p.loss) {
        if (m.to < this.t0 || m.from > this.t1) continue;
        const a = this.x(m.from), b = Math.max(this.x(m.to), a + 3);
        ctx.fillRect(a, y0, b - a, y1 - y0);
      }
    }
    ctx.globalAlpha = 1;
  }

  drawSpans(ctx, tr, y) {
    const lane = tr.lane;
    for (let d = 0; d < lane.depths; d++) {
      const row = lane.rows[d], ry = y + d * ROW_H;
      if (!row || ry + ROW_H < RULER_H || ry > this.ch) continue;
      this.drawRow(ctx, row, ry);
    }
  }

  drawRow(ctx, row, ry) {
    const sp = this.M.spans, st = sp.start, en = sp.end, site = sp.site;
    const a = row.first, b = row.first + row.count;
    const npx = this.nsPerPx(), minDur = MIN_PX * npx, t0 = this.t0, t1 = this.t1;
    const match = this.match;
    let i = lowerBound(sp.maxEnd, a, b, t0);
    while (i < b) {
      const s = st[i];
      if (s > t1) break;
      const e = en[i];
      if (e < t0) { i++; continue; }
      if (e - s >= minDur) {
        this.drawBox(ctx, i, s, e, ry, match && !match[site[i]]);
        i++;
        continue;
      }
      /* a run of narrow spans, drawn as one */
      let j = i, runE = e, count = 1;
      for (;;) {
        const k = lowerBound(st, j + 1, b, runE + npx);
        if (k === j + 1) break;
        const last = k - 1;
        if (en[last] - st[last] >= minDur) {
          count += last - 1 - j;
          j = last - 1;
          runE = Math.max(runE, en[j]);
          break;
        }
        count += last - j;
        j = last;
        if (en[last] > runE) runE = en[last];
        if (st[last] > t1) break;
      }
      const x0 = Math.max(GUTTER_W - 2, this.x(s)), x1 = Math.max(x0 + 1, this.x(runE));
      ctx.globalAlpha = match ? 0.18 : 0.7;
      ctx.fillStyle = this.fill[site[i]];
      ctx.fillRect(x0, ry + 2, x1 - x0, ROW_H - 4);
      if (x1 - x0 > 90 && count > 1) {
        /* a wide run says what it is: zoom in to see them */
        const label = this.fitText(fmtCount(count) + " scopes", x1 - Math.max(x0, GUTTER_W) - 8);
        if (label) {
          ctx.fillStyle = this.ink[site[i]];
          ctx.globalAlpha = match ? 0.12 : 0.6;
          ctx.fillText(label, Math.max(x0, GUTTER_W) + 4, ry + ROW_H / 2);
        }
      }
      ctx.globalAlpha = 1;
      i = j + 1;
    }
  }

  drawBox(ctx, i, s, e, ry, dim) {
    const sp = this.M.spans, C = this.C, site = sp.site[i], flag = sp.flag[i];
    const xs = this.x(s), xe = this.x(e);
    const x0 = Math.max(GUTTER_W - 2, xs), x1 = Math.min(this.cw + 2, xe);
    const w = x1 - x0;
    if (dim) ctx.globalAlpha = 0.2;
    ctx.fillStyle = this.fill[site];
    ctx.fillRect(x0, ry + 1, w > 4 ? w - 1 : w, ROW_H - 2);
    if (flag & F_UNFINISHED) {
      /* open-ended: stripes towards the end it never reached */
      ctx.fillStyle = C.bg;
      ctx.globalAlpha = dim ? 0.1 : 0.45;
      for (let x = Math.max(x0, xe - 40); x < x1; x += 6) ctx.fillRect(x, ry + 1, 2, ROW_H - 2);
      ctx.globalAlpha = dim ? 0.2 : 1;
    }
    if (flag & (F_UNFINISHED | F_NAME_INCOMPLETE | F_UNCERTAIN)) {
      ctx.strokeStyle = C.fg;
      ctx.setLineDash([3, 2]);
      ctx.strokeRect(x0 + 0.5, ry + 1.5, Math.max(1, w - 2), ROW_H - 3);
      ctx.setLineDash([]);
    }
    if (w > 24) {
      const name = this.M.sites[site].name + (flag & F_NAME_INCOMPLETE ? "…?" : "");
      const dur = flag & F_UNFINISHED ? "unfinished" : fmtDur(e - s);
      const tx = Math.max(x0, GUTTER_W) + 4, room = x1 - tx - 4;
      ctx.fillStyle = this.ink[site];
      const nw = this.textWidth(name), dw = this.textWidth(dur);
      if (nw + dw + 10 <= room) {
        ctx.fillText(name, tx, ry + ROW_H / 2);
        ctx.globalAlpha = dim ? 0.15 : 0.7;
        ctx.fillText(dur, tx + nw + 8, ry + ROW_H / 2);
      } else {
        const t = this.fitText(name, room);
        if (t) ctx.fillText(t, tx, ry + ROW_H / 2);
      }
    }
    ctx.globalAlpha = 1;
    if (i === this.selected) {
      ctx.strokeStyle = C.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 + 1, ry + 1, Math.max(2, w - 2), ROW_H - 2);
      ctx.lineWidth = 1;
    } else if (this.hoverHit && this.hoverHit.kind === "span" && this.hoverHit.i === i) {
      ctx.strokeStyle = C.fg;
      ctx.strokeRect(x0 + 0.5, ry + 0.5, Math.max(1, w - 1), ROW_H - 1);
    }
  }

  /* Highlighted spans too narrow to be seen get a mark of their own. */
  drawFound(ctx, top, h) {
    const f = this.found, sp = this.M.spans;
    if (!f || !f.length) return;
    const npx = this.nsPerPx(), from = this.t0 - MIN_PX * npx;
    /* f is in start order; only the narrow ones are drawn here */
    let a = 0, b = f.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (sp.start[f[m]] < from) a = m + 1; else b = m;
    }
    ctx.fillStyle = this.C.accent;
    let drawn = 0;
    for (let k = a; k < f.length && drawn < 20000; k++) {
      const i = f[k], s = sp.start[i];
      if (s > this.t1) break;
      if (sp.end[i] < this.t0 || sp.end[i] - s >= MIN_PX * npx) continue;
      const row = sp.rowOf(i), tr = this.laneTrack.get(row.lane.index);
      if (!tr || row.lane.proc.collapsed) continue;
      const y = tr.y - top + row.depth * ROW_H;
      if (y + ROW_H < RULER_H || y > h) continue;
      ctx.fillRect(Math.round(this.x(s)) - 1, y + 2, 3, ROW_H - 4);
      drawn++;
    }
  }

  drawRange(ctx, h) {
    if (!this.range) return;
    const a = this.x(this.range.a), b = this.x(this.range.b);
    ctx.fillStyle = this.C.sel;
    ctx.fillRect(a, RULER_H, Math.max(1, b - a), h - RULER_H);
    ctx.fillStyle = this.C.accent;
    ctx.fillRect(Math.round(a), RULER_H, 1, h - RULER_H);
    ctx.fillRect(Math.round(b), RULER_H, 1, h - RULER_H);
  }

  drawHoverLine(ctx, h) {
    if (!this.mouse || this.mouse.x < GUTTER_W || this.drag) return;
    ctx.fillStyle = this.C.dim;
    ctx.globalAlpha = 0.6;
    ctx.fillRect(Math.round(this.mouse.x), RULER_H, 1, h - RULER_H);
    ctx.globalAlpha = 1;
  }

  drawLogs(ctx, tr, y) {
    const lg = this.M.logs, r = tr.lane.logs, e = r.first + r.count;
    const npx = this.nsPerPx();
    let i = lowerBound(lg.t, r.first, e, this.t0 - 4 * npx);
    while (i < e) {
      const t = lg.t[i];
      if (t > this.t1 + 4 * npx) break;
      const x = Math.round(this.x(t));
      ctx.fillStyle = lg.flag[i] & F_MARKER ? this.C.marker : this.C.log;
      ctx.beginPath();
      ctx.moveTo(x - 4, y + 2);
      ctx.lineTo(x + 4, y + 2);
      ctx.lineTo(x, y + LOG_H - 1);
      ctx.fill();
      i = Math.max(i + 1, lowerBound(lg.t, i + 1, e, t + 3 * npx));
    }
  }

  drawMerged(ctx, tr, y) {
    const d = tr.lane.density;
    ctx.fillStyle = this.C.merged;
    if (!d) {
      ctx.globalAlpha = 0.35;
      ctx.fillRect(GUTTER_W, y + 1, this.W, MERGED_H - 2);
      ctx.globalAlpha = 1;
      return;
    }
    for (let k = 0; k < d.bins.length; k++) {
      const c = d.bins[k];
      if (!c) continue;
      const a = d.lo + k * d.w, b = a + d.w;
      if (b < this.t0 || a > this.t1) continue;
      const x0 = this.x(a), x1 = Math.max(x0 + 1, this.x(b));
      ctx.globalAlpha = 0.25 + 0.75 * c / d.max;
      ctx.fillRect(x0, y + 1, x1 - x0, MERGED_H - 2);
    }
    ctx.globalAlpha = 1;
  }

  drawStates(ctx, tr, y) {
    const S = this.M.states, r = tr.lane.states, e = r.first + r.count;
    let i = lowerBound(S.t1, r.first, e, this.t0);
    for (; i < e && S.t0[i] <= this.t1; i++) {
      const x0 = this.x(S.t0[i]), x1 = Math.max(x0 + 1, this.x(S.t1[i]));
      const st = S.state[i];
      ctx.fillStyle = st === 3 && (S.kstate[i] & 2) ? STATE_D_COLOR : STATE_COLORS[st] || STATE_COLORS[0];
      ctx.fillRect(x0, y + 2, x1 - x0, STATE_H - 4);
    }
  }

  /* A thread's colour on the CPU tracks: its own. By its name where no
   * other thread has that name, else the name's colour turned for each of
   * the threads sharing it (in lane order), so two "compress" threads are
   * told apart. */
  threadColor(laneIndex) {
    const L = this.M.lanes, l = L[laneIndex];
    const name = l && l.name !== null ? l.name : "tid " + (l ? l.tid : laneIndex);
    if (!this.nameRank) { /* per lane: its rank among the threads of its name, or -1: alone */
      const by = new Map();
      L.forEach((x, i) => { if (x && x.kind === LANE_THREAD && x.name !== null) (by.get(x.name) || by.set(x.name, []).get(x.name)).push(i); });
      this.nameRank = new Int32Array(L.length).fill(-1);
      for (const list of by.values()) if (list.length > 1) list.forEach((i, k) => { this.nameRank[i] = k; });
    }
    const k = laneIndex < this.nameRank.length ? this.nameRank[laneIndex] : -1;
    return cssColor(k < 0 ? nameColor(name, this.dark) : nameColorNth(name, k, this.dark), 1);
  }

  drawCpu(ctx, tr, y) {
    const C = this.M.cpus, r = tr.lane, e = r.first + r.count;
    let i = lowerBound(C.t1, r.first, e, this.t0);
    for (; i < e && C.t0[i] <= this.t1; i++) {
      const x0 = this.x(C.t0[i]), x1 = Math.max(x0 + 1, this.x(C.t1[i]));
      ctx.fillStyle = this.threadColor(C.lane[i]);
      ctx.fillRect(x0, y + 2, x1 - x0, CPU_H - 4);
    }
  }

  drawValues(ctx, tr, y) {
    const V = this.M.values, r = tr.lane.values, e = r.first + r.count;
    const lo = r.lo, hi = r.hi === r.lo ? r.lo + 1 : r.hi;
    const top = y + 6, hgt = VALUE_H - 12;
    const vy = v => top + hgt - (v - lo) / (hi - lo) * hgt;
    const color = tr.lane.attrs ? cssColor(givenColor(tr.lane.color), 1) : this.C.value;
    let i = Math.max(r.first, lowerBound(V.t, r.first, e, this.t0) - 1);
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let started = false, px = -1, pmin = 0, pmax = 0, lastY = 0;
    for (; i < e; i++) {
      const x = Math.round(this.x(V.t[i])), yy = vy(V.v[i]);
      if (!started) { ctx.moveTo(Math.max(GUTTER_W, x), yy); started = true; px = x; pmin = pmax = lastY = yy; continue; }
      if (x === px) { pmin = Math.min(pmin, yy); pmax = Math.max(pmax, yy); lastY = yy; continue; }
      if (pmax - pmin > 0) { ctx.lineTo(px, pmin); ctx.lineTo(px, pmax); }
      ctx.lineTo(px, lastY);
      ctx.lineTo(x, lastY);
      ctx.lineTo(x, yy);
      px = x; pmin = pmax = lastY = yy;
      if (V.t[i] > this.t1) break;
    }
    if (started) {
      ctx.lineTo(i >= e ? this.x(Math.min(this.t1, tr.lane.proc.streams.reduce((a, s) => Math.max(a, s.last), 0))) : px, lastY);
      ctx.stroke();
    }
    ctx.lineWidth = 1;
    ctx.fillStyle = this.C.dim;
    ctx.fillText(fmtNum(r.hi), GUTTER_W + 4, top + 2);
    ctx.fillText(fmtNum(r.lo), GUTTER_W + 4, top + hgt - 2);
  }

  /* ---- what is under the mouse ---- */

  hit(x, y) {
    const top = this.box.scrollTop;
    if (y < RULER_H) return { kind: "ruler", t: this.t(x) };
    const tr = this.trackAt(y + top);
    if (!tr) return null;
    if (tr.kind === "proc") return this.hitProc(tr, x, y + top - tr.y);
    if (x < GUTTER_W) {
      const lane = tr.lane;
      return lane ? { kind: "lane", lane } : null;
    }
    return TRACKS[tr.kind].hit(this, tr, x, y + top - tr.y);
  }

  hitProc(tr, x, y) {
    const tol = 3 * this.nsPerPx(), t = this.t(x);
    if (x >= GUTTER_W)
      for (const m of tr.proc.loss) if (t >= m.from - tol && t <= m.to + tol) return { kind: "loss", m };
    return { kind: "proc", proc: tr.proc };
  }

  hitSpans(tr, x, y) {
    const depth = Math.floor(y / ROW_H), row = tr.lane.rows[depth];
    if (!row) return null;
    const sp = this.M.spans, t = this.t(x), npx = this.nsPerPx();
    const a = row.first, b = a + row.count;
    let best = -1;
    let i = lowerBound(sp.maxEnd, a, b, t - npx);
    for (; i < b && sp.start[i] <= t + npx; i++) {
      if (sp.end[i] + npx < t) continue;
      if (best < 0 || sp.end[i] - sp.start[i] > sp.end[best] - sp.start[best]) best = i;
    }
    if (best < 0) return null;
    if (sp.end[best] - sp.start[best] >= MIN_PX * npx) return { kind: "span", i: best };
    const lo = lowerBound(sp.start, a, b, t - 2 * npx), hi = lowerBound(sp.start, a, b, t + 2 * npx);
    if (hi - lo <= 1) return { kind: "span", i: best };
    return { kind: "run", count: hi - lo, first: lo, a: t - 2 * npx, b: t + 2 * npx, row };
  }

  hitLogs(tr, x) {
    const lg = this.M.logs, r = tr.lane.logs, e = r.first + r.count, npx = this.nsPerPx(), t = this.t(x);
    const lo = lowerBound(lg.t, r.first, e, t - 5 * npx), hi = lowerBound(lg.t, r.first, e, t + 5 * npx);
    return hi > lo ? { kind: "logs", first: lo, count: hi - lo, lane: tr.lane } : null;
  }

  hitMerged(tr, x) {
    const d = tr.lane.density, t = this.t(x);
    if (!d) return { kind: "merged", lane: tr.lane, count: tr.lane.merged, all: true };
    const k = Math.floor((t - d.lo) / d.w);
    return { kind: "merged", lane: tr.lane, count: k >= 0 && k < d.bins.length ? d.bins[k] : 0, a: d.lo + k * d.w, b: d.lo + (k + 1) * d.w };
  }

  hitStates(tr, x) {
    const S = this.M.states, r = tr.lane.states, e = r.first + r.count, t = this.t(x);
    const i = lowerBound(S.t1, r.first, e, t);
    return i < e && S.t0[i] <= t ? { kind: "state", i, lane: tr.lane } : null;
  }

  hitCpu(tr, x) {
    const C = this.M.cpus, r = tr.lane, e = r.first + r.count, t = this.t(x);
    const i = lowerBound(C.t1, r.first, e, t);
    return i < e && C.t0[i] <= t ? { kind: "cpu", i, cpu: r.cpu, lane: this.M.lanes[C.lane[i]] } : null;
  }

  hitValues(tr, x) {
    const V = this.M.values, r = tr.lane.values, e = r.first + r.count, t = this.t(x);
    const i = lowerBound(V.t, r.first, e, t + this.nsPerPx()) - 1;
    return i >= r.first ? { kind: "value", i, lane: tr.lane } : null;
  }

  /* ---- input ---- */

  listen() {
    const box = this.box;
    new ResizeObserver(() => this.resize()).observe(box);
    box.addEventListener("scroll", () => this.redraw());
    box.addEventListener("wheel", e => this.onWheel(e), { passive: false });
    box.addEventListener("mousedown", e => this.onDown(e));
    window.addEventListener("mousemove", e => this.onMove(e));
    window.addEventListener("mouseup", e => this.onUp(e));
    box.addEventListener("mouseleave", () => { this.mouse = null; this.hoverHit = null; this.hooks.onHover(null); this.redraw(); });
    box.addEventListener("dblclick", e => {
      const p = this.pos(e), h = this.hit(p.x, p.y);
      if (h && h.kind === "span") this.show(this.M.spans.start[h.i], this.M.spans.end[h.i]);
      else if (h && h.kind === "run") this.show(h.a, h.b);
    });
    window.addEventListener("keydown", e => this.onKey(e, true));
    window.addEventListener("keyup", e => this.onKey(e, false));
    window.addEventListener("blur", () => this.held.clear());
  }

  pos(e) {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  onWheel(e) {
    e.preventDefault();
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.ch : 1;
    const dx = e.deltaX * unit, dy = e.deltaY * unit;
    if (e.shiftKey) {
      this.box.scrollTop += dy || dx;
      return;
    }
    const p = this.pos(e);
    if (Math.abs(dx) > Math.abs(dy)) {
      this.pan(dx / this.W);
      return;
    }
    const tm = p.x >= GUTTER_W ? this.t(p.x) : (this.t0 + this.t1) / 2;
    this.zoomAt(tm, Math.exp(clamp(dy, -300, 300) * 0.0025));
  }

  onDown(e) {
    if (e.button !== 0) return;
    const p = this.pos(e);
    if (p.x > this.cw || p.y > this.ch) return; /* the scroll bar */
    e.preventDefault();
    this.box.focus({ preventScroll: true });
    const rangeMode = e.shiftKey || p.y < RULER_H;
    this.drag = { x: p.x, y: p.y, t0: this.t0, t1: this.t1, top: this.box.scrollTop, moved: false, range: rangeMode && p.x >= GUTTER_W, ta: this.t(p.x) };
  }

  onMove(e) {
    const p = this.pos(e);
    const d = this.drag;
    if (d) {
      if (Math.abs(p.x - d.x) + Math.abs(p.y - d.y) > 3) d.moved = true;
      if (!d.moved) return;
      if (d.range) {
        const tb = this.t(p.x);
        this.range = { a: Math.min(d.ta, tb), b: Math.max(d.ta, tb) };
        this.redraw();
      } else {
        const dt = (p.x - d.x) / this.W * (d.t1 - d.t0);
        this.setView(d.t0 - dt, d.t1 - dt);
        this.box.scrollTop = d.top - (p.y - d.y);
      }
      return;
    }
    const inside = p.x >= 0 && p.y >= 0 && p.x < this.cw && p.y < this.ch;
    if (!inside) return;
    this.mouse = p;
    this.hoverHit = this.hit(p.x, p.y);
    this.hooks.onHover(this.hoverHit, e.clientX, e.clientY);
    this.redraw();
  }

  onUp(e) {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    const p = this.pos(e);
    if (d.moved) {
      if (d.range) this.setRange(this.range);
      return;
    }
    const h = this.hit(p.x, p.y);
    if (!h) { this.select(-1); return; }
    if (h.kind === "proc") {
      h.proc.collapsed = !h.proc.collapsed;
      this.relayout();
    } else if (h.kind === "span") {
      this.clicked = true;
      this.select(h.i);
      this.clicked = false;
    } else if (h.kind === "run") {
      this.show(h.a, h.b);
    } else if (h.kind === "ruler") {
      this.setRange(null);
    } else {
      this.select(-1);
    }
  }

  onKey(e, down) {
    const tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if ("wsad".includes(k) && k.length === 1) {
      e.preventDefault();
      if (!down) { this.held.delete(k); return; }
      if (e.repeat && this.held.has(k)) return;
      this.held.add(k);
      this.step(k, 1);
      this.animate();
      return;
    }
    if (!down) return;
    const sp = this.M.spans;
    if (k === "ArrowUp" || k === "ArrowDown") {
      this.box.scrollTop += (k === "ArrowUp" ? -1 : 1) * ROW_H * 3;
      e.preventDefault();
    } else if (k === "ArrowLeft" || k === "ArrowRight") {
      this.pan(k === "ArrowLeft" ? -0.1 : 0.1);
      e.preventDefault();
    } else if (k === "0" || k === "Home") {
      this.fit();
    } else if (k === "f") {
      if (this.range) this.show(this.range.a, this.range.b);
      else if (this.selected >= 0) this.show(sp.start[this.selected], sp.end[this.selected], this.selected);
    } else if (k === "Escape") {
      if (this.range) this.setRange(null);
      else this.select(-1);
    } else {
      return;
    }
  }

  /* One step of a navigation key: a fifth of the view. */
  step(k, amount) {
    const tm = this.mouse && this.mouse.x >= GUTTER_W ? this.t(this.mouse.x) : (this.t0 + this.t1) / 2;
    if (k === "w") this.zoomAt(tm, Math.pow(0.8, amount));
    else if (k === "s") this.zoomAt(tm, Math.pow(1.25, amount));
    else if (k === "a") this.pan(-0.2 * amount);
    else if (k === "d") this.pan(0.2 * amount);
  }

  /* While a key is held, after a first step, the view keeps moving. */
  animate() {
    if (this.animating) return;
    this.animating = true;
    let last = performance.now();
    const wait = last + 250;
    const tick = now => {
      if (!this.held.size) { this.animating = false; return; }
      if (now > wait) for (const k of this.held) this.step(k, (now - last) / 120);
      last = now;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }
}

function fmtNum(v) {
  if (!isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e9 || a < 1e-3)) return v.toExponential(3);
  return Number.isInteger(v) ? fmtCount(v) : String(Math.round(v * 1000) / 1000);
}
