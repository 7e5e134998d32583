/* live.js — the page as orbit-collector's live view (data-mode "live"):
 * the list of streams, asked for once a second (/streams), and the
 * watched stream's data blocks, pushed by the collector as Server-Sent
 * Events (/events?stream=N: "block" a data block, "meta" the blocks this
 * page was sent and skipped). Each block is the stream's newest history,
 * a whole page's data: the first builds the Page, the next replace its
 * model (Page.update).
 *
 * Following (the newest time at the view's right edge, like tail -f) is
 * on at first; any zoom or pan pauses it, the Follow button or L resumes.
 * Every text shown comes from the collector and goes in as text, never as
 * markup (util.js el). */

const LIVE_POLL_MS = 1000; /* a quarter of it while no stream is watched */
const LIVE_STATS_MS = 1000; /* the statistics of a view that moved, at most this often */

/* The statistics of the spans the page holds that overlap [t0, t1], by
 * name and kind, as the STAT rows the Stats table shows (model.js
 * buildStats): count, total, self, mean, min, p50/p95/p99 (nearest rank),
 * max, unfinished. */
function windowStats(M, t0, t1) {
  const sp = M.spans, by = new Map();
  for (let i = 0; i < sp.n; i++) {
    if (sp.start[i] > t1 || sp.end[i] < t0) continue;
    const async = (sp.flag[i] & F_ASYNC) !== 0, name = M.sites[sp.site[i]].name || "";
    const key = (async ? "a" : "s") + name;
    let g = by.get(key);
    if (!g) by.set(key, (g = { name, async, d: [], self: 0, unfinished: 0 }));
    if (sp.flag[i] & F_UNFINISHED) g.unfinished++;
    g.d.push(sp.dur(i));
    if (!async) g.self += sp.self(i);
  }
  const rows = [];
  for (const g of by.values()) {
    const d = Float64Array.from(g.d).sort(), n = d.length;
    const at = p => d[Math.min(n - 1, Math.max(0, Math.ceil(n * p / 100) - 1))];
    let total = 0;
    for (const x of d) total += x;
    rows.push({
      kind: g.async ? "async" : "scope", name: g.name, count: n, total, self: g.async ? NaN : g.self,
      mean: total / n, min: d[0], p50: at(50), p95: at(95), p99: at(99), max: d[n - 1],
      unfinished: g.unfinished, approx: false,
    });
  }
  return rows;
}
const LIVE_FIRST_VIEW_NS = 10e9; /* the first view: the newest 10 s at most */

class LiveView {
  constructor() {
    this.page = null;
    this.follow = true;
    this.stream = 0;
    this.streams = [];
    this.blocks = 0;
    this.sent = 0;
    this.skipped = 0;
    this.source = null;
    this.state = "waiting";
    const want = /[?&]stream=([0-9]+)/.exec(location.search);
    this.asked = want ? Number(want[1]) : 0;
    this.bar();
    this.expose();
    this.poll();
    window.addEventListener("keydown", e => {
      if (e.target && e.target.tagName === "INPUT") return;
      if (e.key === "l" || e.key === "L") this.setFollow(true);
    });
  }

  /* ---- the bar: streams, follow, what came ---- */

  bar() {
    const box = el("section", "live");
    box.id = "live";
    const head = el("div", "livehead");
    head.appendChild(el("span", "brand", "Live"));
    this.status = el("span", "facts", "");
    head.appendChild(this.status);
    head.appendChild(el("span", "grow"));
    this.followButton = el("button", "", "");
    this.followButton.type = "button";
    this.followButton.id = "follow";
    this.followButton.title = "Keep the newest time at the right edge (L)";
    this.followButton.addEventListener("click", () => this.setFollow(!this.follow));
    head.appendChild(this.followButton);
    box.appendChild(head);
    this.table = el("table", "livestreams");
    this.table.id = "streams";
    box.appendChild(this.table);
    const bar = $("bar");
    bar.parentNode.insertBefore(box, bar.nextSibling);
    this.setFollow(true);
  }

  setFollow(on) {
    this.follow = on;
    this.followButton.textContent = on ? "Following ▶" : "Follow ▶";
    this.followButton.classList.toggle("on", on);
    if (on && this.page) {
      const tl = this.page.tl, M = this.page.M, w = Math.max(tl.t1 - tl.t0, 1000);
      tl.setView(M.end - w * 0.97, M.end + w * 0.03, true);
      tl.redraw();
    }
  }

  /* The user zoomed or panned (Page's hook). */
  viewChanged() {
    if (this.follow && this.page && !this.applying) this.setFollow(false);
    if (!this.statsTimer && this.page)
      this.statsTimer = setTimeout(() => {
        this.statsTimer = null;
        this.stats();
      }, LIVE_STATS_MS);
  }

  /* The statistics table over the view (Page.update asks for them). */
  stats() {
    const p = this.page;
    if (!p) return;
    p.M.stats = windowStats(p.M, p.tl.t0, p.tl.t1);
    p.stats.body();
  }

  showStatus() {
    const s = this.streams.find(x => x.id === this.stream);
    const parts = [];
    if (!s) parts.push(this.streams.length ? "choose a stream" : "no stream yet: trace a program with ORBIT_COLLECTOR set to this collector");
    else {
      parts.push((s.process || "pid " + s.pid) + " " + s.state);
      parts.push(fmtCount(s.events) + " events");
      if (s.state === "live") parts.push(fmtCount(Math.round(s.rate)) + "/s");
      if (s.lost) parts.push(fmtCount(s.lost) + " lost");
    }
    parts.push(fmtCount(this.blocks) + " updates" + (this.skipped ? ", " + fmtCount(this.skipped) + " skipped (this page read slowly)" : ""));
    if (this.page) {
      const from = this.page.M.meta.get("live_from");
      if (from && from.v > 0) parts.push("history from " + fmtDur(from.v) + " (older: the capture file)");
    }
    if (this.state !== "open") parts.push(this.state);
    this.status.textContent = parts.join(" · ");
  }

  renderStreams() {
    const t = this.table;
    clear(t);
    const head = el("tr");
    for (const h of ["", "state", "process", "pid", "host", "command", "events/s", "events", "lost", "capture"]) head.appendChild(el("th", "", h));
    t.appendChild(head);
    for (const s of this.streams) {
      const tr = el("tr", s.id === this.stream ? "on" : "");
      const td = (text, cls) => { const c = el("td", cls || "", text); tr.appendChild(c); return c; };
      const pick = el("button", "", s.id === this.stream ? "watching" : "watch");
      pick.type = "button";
      pick.addEventListener("click", () => this.watch(s.id));
      td("").appendChild(pick);
      td(s.state + (s.why ? " (" + s.why + ")" : ""), s.state);
      td(s.process);
      td(String(s.pid), "num");
      td(s.host);
      td(s.command.length > 80 ? s.command.slice(0, 80) + "…" : s.command, "cmd");
      td(s.state === "live" ? fmtCount(Math.round(s.rate)) : "", "num");
      td(fmtCount(s.events), "num");
      td(fmtCount(s.lost), s.lost ? "num bad" : "num");
      const a = el("a", "", "download");
      a.href = "capture/" + s.id;
      a.setAttribute("download", s.file);
      a.title = "The capture as written so far: " + s.file;
      td("").appendChild(a);
      t.appendChild(tr);
    }
  }

  poll() {
    fetch("streams", { cache: "no-store", credentials: "same-origin" })
      .then(r => (r.ok ? r.json() : Promise.reject(new Error("the collector answered " + r.status))))
      .then(j => {
        this.streams = Array.isArray(j.streams) ? j.streams : [];
        if (!this.stream) {
          const s = this.streams.find(x => x.id === this.asked) || this.streams.find(x => x.state === "live") || this.streams[0];
          if (s) this.watch(s.id);
        }
        this.renderStreams();
        this.showStatus();
      })
      .catch(err => {
        this.state = "the collector cannot be reached (" + (err && err.message ? err.message : String(err)) + ")";
        this.showStatus();
      })
      .finally(() => setTimeout(() => this.poll(), this.stream ? LIVE_POLL_MS : LIVE_POLL_MS / 4));
  }

  /* ---- a stream's blocks ---- */

  watch(id) {
    if (id === this.stream && this.source) return;
    if (this.source) this.source.close();
    this.stream = id;
    this.blocks = this.sent = this.skipped = 0;
    try { history.replaceState(null, "", "?stream=" + id + location.hash); } catch (e) { /* fine */ }
    const src = new EventSource("events?stream=" + id);
    this.source = src;
    this.state = "connecting";
    src.addEventListener("open", () => { this.state = "open"; this.showStatus(); });
    src.addEventListener("error", () => { this.state = "disconnected, retrying"; this.showStatus(); });
    src.addEventListener("meta", e => {
      try {
        const m = JSON.parse(e.data);
        this.sent = m.sent;
        this.skipped = m.skipped;
      } catch (err) { /* a meta line is only for the status */ }
    });
    src.addEventListener("block", e => this.block(e.data));
    this.renderStreams();
    this.showStatus();
  }

  block(text) {
    const D = readData(text);
    this.lastData = D;
    this.blocks++;
    this.receivedAt = performance.now();
    this.applying = true;
    try {
      if (!this.page) {
        this.page = new Page(D, this);
        const tl = this.page.tl, M = this.page.M, w = Math.min(Math.max(M.end, 1000), LIVE_FIRST_VIEW_NS);
        tl.setView(M.end - w * 0.97, M.end + w * 0.03, true);
        this.stats();
        tl.redraw();
      } else this.page.update(D, this.follow);
    } finally {
      this.applying = false;
    }
    this.showStatus();
  }

  /* What tests read: window.orbitLive. */
  expose() {
    const live = this;
    window.orbitLive = Object.freeze({
      stream: () => live.stream,
      follow: () => live.follow,
      blocks: () => ({ received: live.blocks, sent: live.sent, skipped: live.skipped }),
      streams: () => live.streams.map(s => Object.assign({}, s)),
      /* the newest time the page holds, CLOCK_MONOTONIC ns (null before a block) */
      newest: () => {
        if (!live.page) return null;
        const o = live.page.M.meta.get("origin_ns");
        return (o ? Number(o.s) : 0) + live.page.M.end;
      },
      names: () => (live.page ? live.page.M.sites.map(s => s.name) : []),
      view: () => (live.page ? [live.page.tl.t0, live.page.tl.t1, live.page.M.end] : null),
    });
  }
}
