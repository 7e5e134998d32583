/* page.js — the page around the timeline: the header (title, facts,
 * search, theme, help), the notices (loss, what the page left out), the
 * panel's tabs (flame graph, statistics, selection, captures), the tooltip,
 * the view range in the URL fragment, and window.orbit, which tests and
 * the curious read. Runs once the document is parsed. */

const HELP = [
  ["Wheel, W / S", "zoom in / out at the mouse"],
  ["Drag, A / D, ← / →", "pan"],
  ["Shift+wheel, ↑ / ↓", "scroll the threads"],
  ["Shift+drag, drag on the ruler", "select a range (the flame graph follows it)"],
  ["Click", "select a scope; click a process to fold it"],
  ["Double-click, F", "zoom to the scope or the range"],
  ["0", "the whole capture"],
  ["/", "find scopes by name (=name: exactly that name)"],
  ["Enter, Shift+Enter", "next, previous instance"],
  ["Esc", "clear the range, then the selection"],
  ["URL #t=FROM,TO", "opens that range (ns after the start; or 1.5ms, 20us, 2s)"],
];

/* "1.5ms" -> 1500000; plain numbers are ns. */
function parseTime(s) {
  const m = /^\s*(-?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$/i.exec(s);
  if (!m) return NaN;
  const u = { ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9 }[(m[2] || "ns").toLowerCase()];
  return parseFloat(m[1]) * u;
}

function readFragment() {
  const out = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const at = part.indexOf("=");
    if (at > 0) {
      try { out[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1)); } catch (e) { /* ignored */ }
    }
  }
  return out;
}

class Page {
  /* D: the data (loadData, or a live block); live: the live view that
   * sends more (live.js), or null. */
  constructor(D, live) {
    const t0 = performance.now();
    this.live = live || null;
    const t1 = performance.now();
    this.M = buildModel(D);
    const t2 = performance.now();
    this.timing = { decodeMs: t1 - t0, modelMs: t2 - t1, firstDrawMs: NaN, startedMs: t0 };
    this.search = { text: "", list: null, index: -1 };
    this.header();
    this.notices();
    this.tl = new Timeline(this.M, $("timeline"), $("tl"), $("spacer"), {
      onView: () => {
        if (this.live) this.live.viewChanged(); /* the user's zoom or pan pauses following */
        this.viewChanged();
      },
      onSelect: i => this.details(i),
      onRange: r => this.rangeChanged(r),
      onHover: (h, x, y) => this.tip(h, x, y),
      onDraw: () => this.drawn(),
    });
    this.flame = new Flame(this.M, $("tab-flame"), $("fg"), {
      timeline: () => this.tl,
      onHover: (h, x, y) => this.tip(h, x, y),
    });
    this.stats = new Stats(this.M, $("stats"), $("statsmore"), { onPick: r => this.pick(r), onStep: d => this.stepFound(d) });
    this.tabs();
    this.searchBox();
    this.themeButton();
    this.helpBox();
    this.splitter();
    this.captures();
    this.details(-1);
    const f = readFragment();
    this.applyFragment(f);
    window.addEventListener("hashchange", () => this.applyFragment(readFragment()));
    this.expose();
  }

  /* ---- header, notices ---- */

  header() {
    const M = this.M, names = [...new Set(M.procs.map(p => p.name || "pid " + p.pid))];
    const title = names.slice(0, 3).join(", ") + (names.length > 3 ? " +" + (names.length - 3) : "");
    $("title").textContent = title;
    document.title = "Orbit · " + (title || "capture");
    const threads = M.lanes.filter(l => l.kind === LANE_THREAD).length;
    const scopes = M.stats.filter(s => s.kind === "scope").reduce((a, s) => a + s.count, 0);
    const facts = [
      M.procs.length === 1 ? "pid " + M.procs[0].pid : M.procs.length + " processes",
      threads + (threads === 1 ? " thread" : " threads"),
      fmtCount(scopes) + " scopes",
      fmtDur(M.end),
    ];
    $("facts").textContent = facts.join(" · ");
  }

  notices() {
    const M = this.M, box = $("notices"), meta = k => (M.meta.get(k) || { v: 0 }).v;
    const add = (cls, text) => box.appendChild(el("div", "notice " + cls, text));
    for (const s of M.streams) {
      const where = (s.proc && s.proc.name ? s.proc.name : "a stream") + " (" + (s.file || "?") + ")";
      if (s.lost > 0)
        add("bad", fmtCount(s.lost) + " records lost in " + where + ": marked in red on the process where they were lost.");
      if (s.equation === "fails") add("bad", "The loss equation does not hold in " + where + ": claimed " + fmtCount(s.claimed) + ", delivered " + fmtCount(s.delivered) + ", lost " + fmtCount(s.lost) + ".");
      if (!s.complete && !this.live) add("warn", "No end of stream in " + where + ": the agent was killed or the capture was cut; scopes still open are drawn unfinished.");
      if (s.logLost > 0) add("warn", fmtCount(s.logLost) + " log records lost in " + where + ".");
    }
    if (meta("live_unshown") > 0)
      add("info", "The live view draws a share of this stream: reading it all would cost the collector more than its budget (1 % of a CPU). " + fmtCount(meta("live_unshown")) +
        " records are in the capture file and not drawn here; scopes around them may be drawn unfinished. orbit-replay on the file shows everything.");
    if (meta("merged") > 0)
      add("warn", "This page keeps the " + fmtCount(meta("kept")) + " longest of " + fmtCount(meta("kept") + meta("merged")) +
        " scopes and async spans (--html-max-scopes " + fmtCount(meta("cap")) + "): " + fmtCount(meta("merged")) +
        " shorter ones (none longer than " + fmtDur(meta("merged_max_ns")) + ") are merged into the amber strip under their lane. The statistics count them all.");
    if (meta("values_dropped") > 0)
      add("warn", "Value tracks are thinned to every " + fmtCount(meta("values_stride")) + "th sample or so (" + fmtCount(meta("values_dropped")) +
        " samples left out past the page's limit, half of --html-max-scopes).");
    if (meta("lines_dropped") > 0)
      add("warn", "Log lines are thinned to every " + fmtCount(meta("lines_stride")) + "th line or so (" + fmtCount(meta("lines_dropped")) +
        " left out past the page's limit, a quarter of --html-max-scopes).");
    if (meta("texts_dropped") > 0) add("warn", fmtCount(meta("texts_dropped")) + " log lines are shown without their text (the page's text limit).");
    if (meta("loss_marks_dropped") > 0) add("warn", fmtCount(meta("loss_marks_dropped")) + " loss marks past the page's limit are not drawn (the notices above count all loss).");
    if (meta("strings_dropped") > 0) add("warn", fmtCount(meta("strings_dropped")) + " texts did not fit the page's string table and are left out.");
    if (meta("out_of_memory") > 0) add("bad", "orbit-replay ran out of memory while writing this page: some events are missing.");
    const filter = M.meta.get("filter");
    if (filter && filter.s) add("info", "Filtered: " + filter.s);
    box.hidden = !box.firstChild;
  }

  /* ---- tabs and panel ---- */

  tabs() {
    for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => this.showTab(b.dataset.tab));
    this.showTab("flame");
  }

  showTab(name) {
    this.tab = name;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("on", b.dataset.tab === name);
    for (const t of document.querySelectorAll(".tab")) t.classList.toggle("on", t.id === "tab-" + name);
    $("flamehead").hidden = name !== "flame";
    if (name === "flame" && this.ready) {
      if (!this.flame.g) this.flameFor(this.tl.range);
      else this.flame.draw();
    }
  }

  flameFor(range) {
    this.flame.compute(range);
    const head = $("flamehead");
    clear(head);
    head.appendChild(el("span", "", range ? "Selected range: " + fmtDur(range.b - range.a) + " from " + fmtTick(range.a, (range.b - range.a) / 100) : "Whole capture, all threads"));
    if (range) {
      const b = el("button", "", "Whole capture");
      b.type = "button";
      b.addEventListener("click", () => this.tl.setRange(null));
      head.appendChild(b);
    }
  }

  rangeChanged(r) {
    if (this.tab === "flame" && this.ready) this.flameFor(r);
    else this.flame.g = null;
  }

  splitter() {
    const split = $("split"), main = $("main");
    let drag = null;
    split.addEventListener("mousedown", e => { drag = { y: e.clientY, h: $("panel").getBoundingClientRect().height }; e.preventDefault(); });
    window.addEventListener("mousemove", e => {
      if (!drag) return;
      const h = clamp(drag.h - (e.clientY - drag.y), 60, main.clientHeight - 120);
      main.style.setProperty("--panel", h + "px");
    });
    window.addEventListener("mouseup", () => { drag = null; });
  }

  /* ---- search ---- */

  searchBox() {
    const input = $("search");
    let timer = 0;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.find(input.value), 120);
    });
    input.addEventListener("keydown", e => {
      if (e.key === "Enter") {
        e.preventDefault();
        clearTimeout(timer);
        if (input.value !== this.search.text) this.find(input.value);
        this.stepFound(e.shiftKey ? -1 : 1);
      } else if (e.key === "Escape") {
        input.value = "";
        this.find("");
        input.blur();
      }
    });
    $("next").addEventListener("click", () => this.stepFound(1));
    $("prev").addEventListener("click", () => this.stepFound(-1));
    window.addEventListener("keydown", e => {
      const tag = e.target && e.target.tagName;
      if (tag === "INPUT" || tag === "TEXTAREA" || (tag === "BUTTON" && e.key === "Enter")) return;
      if (e.key === "/") { e.preventDefault(); input.focus(); input.select(); }
      else if (e.key === "?") this.toggleHelp();
      else if (e.key === "Enter" && this.search.list) this.stepFound(e.shiftKey ? -1 : 1);
    });
  }

  find(text) {
    this.search = { text, list: null, index: -1 };
    const found = $("found");
    if (!text) {
      this.tl.highlight(null, null);
      this.stats.mark(null);
      found.textContent = "";
      this.viewChanged();
      return;
    }
    let test;
    if (text.startsWith("=")) {
      const want = text.slice(1);
      test = name => name === want;
    } else {
      const want = text.toLowerCase();
      test = name => name.toLowerCase().includes(want);
    }
    const r = findSpans(this.M, test);
    this.search.list = r.list;
    this.tl.highlight(r.match, r.list);
    found.textContent = r.list.length ? fmtCount(r.list.length) + " found" : "no match";
    this.viewChanged();
  }

  stepFound(dir) {
    const s = this.search;
    if (!s.list || !s.list.length) return;
    const n = s.list.length;
    if (s.index < 0) {
      /* from where the view is: the first instance at or after its middle, or its start */
      const sp = this.M.spans, mid = this.tl.selected >= 0 ? sp.start[this.tl.selected] : this.tl.t0;
      let k = 0;
      while (k < n && sp.start[s.list[k]] < mid) k++;
      s.index = dir > 0 ? (k < n ? k : 0) : (k > 0 ? k - 1 : n - 1);
      if (this.tl.selected >= 0 && s.list[s.index] === this.tl.selected) s.index = (s.index + dir + n) % n;
    } else {
      s.index = (s.index + dir + n) % n;
    }
    const i = s.list[s.index], sp = this.M.spans;
    this.tl.select(i);
    this.tl.show(sp.start[i], sp.end[i], i);
    $("found").textContent = fmtCount(s.index + 1) + " / " + fmtCount(n);
  }

  /* A row of the statistics: its instances highlighted, Enter steps. */
  pick(r) {
    const input = $("search");
    if (!r) {
      input.value = "";
      this.find("");
      return;
    }
    input.value = "=" + r.name;
    this.find(input.value);
    this.stats.mark(r);
  }

  /* ---- URL fragment: the view range (and the search) ---- */

  viewChanged() {
    clearTimeout(this.fragTimer);
    this.fragTimer = setTimeout(() => {
      const tl = this.tl;
      let h = "#t=" + Math.round(tl.t0) + "," + Math.round(tl.t1);
      if (this.search.text) h += "&q=" + encodeURIComponent(this.search.text);
      if (h !== location.hash) {
        this.ownHash = h;
        try { history.replaceState(null, "", h); } catch (e) { /* a page from disk may refuse: fine */ }
      }
    }, 200);
  }

  applyFragment(f) {
    if (location.hash === this.ownHash) return;
    if (f.q !== undefined && f.q !== this.search.text) {
      $("search").value = f.q;
      this.find(f.q);
    }
    if (f.t) {
      const [a, b] = f.t.split(",").map(parseTime);
      if (isFinite(a) && isFinite(b) && b > a) this.tl.setView(a, b, true);
    }
  }

  /* ---- theme, help ---- */

  themeButton() {
    const b = $("theme"), order = ["auto", "light", "dark"], names = { auto: "◐ system", light: "☀ light", dark: "☾ dark" };
    let mode = "auto";
    const system = window.matchMedia("(prefers-color-scheme: dark)");
    const apply = () => {
      /* auto follows the system; the CSS knows only data-theme */
      document.documentElement.dataset.theme = mode !== "auto" ? mode : system.matches ? "dark" : "light";
      b.textContent = names[mode];
      this.tl.theme();
      if (this.flame.g) this.flame.draw();
    };
    b.addEventListener("click", () => { mode = order[(order.indexOf(mode) + 1) % 3]; apply(); });
    system.addEventListener("change", apply);
    apply();
  }

  helpBox() {
    const box = $("helpbox");
    box.appendChild(el("h2", "", "Controls"));
    const t = el("table");
    for (const [k, v] of HELP) {
      const tr = el("tr");
      tr.appendChild(el("th", "", k));
      tr.appendChild(el("td", "", v));
      t.appendChild(tr);
    }
    box.appendChild(t);
    box.appendChild(el("p", "dim", "A scope narrower than a few pixels is drawn merged with its neighbours: zoom in to see each one. Dashed outlines: unfinished, name cut short, or times the agent could not trust. Red on a process: records lost there."));
    const close = el("button", "", "Close");
    close.type = "button";
    close.addEventListener("click", () => this.toggleHelp());
    box.appendChild(close);
    $("help").addEventListener("click", () => this.toggleHelp());
  }

  toggleHelp() { $("helpbox").hidden = !$("helpbox").hidden; }

  /* ---- tooltip ---- */

  tip(h, x, y) {
    const tip = $("tip");
    const lines = h ? this.describe(h) : null;
    if (!lines) { tip.style.display = "none"; return; }
    clear(tip);
    tip.appendChild(el("div", "tiphead", lines[0]));
    for (const l of lines.slice(1)) {
      if (typeof l === "string") { tip.appendChild(el("div", "tipline", l)); continue; }
      const row = el("div", "tiprow");
      row.appendChild(el("span", "k", l[0]));
      row.appendChild(el("span", "v", l[1]));
      tip.appendChild(row);
    }
    tip.style.display = "block";
    const r = tip.getBoundingClientRect();
    tip.style.left = clamp(x + 14, 4, window.innerWidth - r.width - 4) + "px";
    tip.style.top = (y + 16 + r.height > window.innerHeight ? y - r.height - 8 : y + 16) + "px";
  }

  threadName(lane) {
    return (lane.name !== null ? lane.name : "thread") + " (tid " + lane.tid + ")";
  }

  /* What the tooltip says: a title and [label, value] rows. */
  describe(h) {
    const M = this.M, sp = M.spans;
    switch (h.kind) {
    case "span": return this.spanLines(h.i, true);
    case "run": return [fmtCount(h.count) + " scopes here", ["first", M.sites[sp.site[h.first]].name], "Too narrow to draw one by one: zoom in (W, wheel) or click."];
    case "logs": {
      const out = [h.count === 1 ? "log line" : fmtCount(h.count) + " log lines", ["thread", this.threadName(h.lane)]];
      for (let k = h.first; k < h.first + Math.min(h.count, 8); k++) {
        const text = M.strings.get(M.logs.text[k]);
        out.push([fmtTick(M.logs.t[k], 1), text === null ? "(text not kept)" : text]);
      }
      if (h.count > 8) out.push("… and " + fmtCount(h.count - 8) + " more: zoom in");
      return out;
    }
    case "value": {
      const lane = h.lane;
      return [lane.name !== null ? lane.name : "value", ["value", fmtNum(M.values.v[h.i])], ["at", fmtTime(M.values.t[h.i])], ["process", (lane.proc.name || "") + " (pid " + lane.proc.pid + ")"], ["range", fmtNum(lane.values.lo) + " … " + fmtNum(lane.values.hi)]];
    }
    case "loss": {
      const m = h.m;
      return [fmtCount(m.count) + (m.log ? " log records lost" : " records lost"), ["where", m.from === m.to ? fmtTime(m.from) : fmtTime(m.from) + " … " + fmtDur(m.to - m.from)], ["ring", (m.log ? "page ring " : "scope ring ") + m.ring], "A ring holds the records of several threads: the loss belongs to the process."];
    }
    case "merged":
      return [h.all ? fmtCount(h.count) + " scopes left out" : "≈" + fmtCount(h.count) + " scopes left out here", ["thread", this.threadName(h.lane)], ["why", "--html-max-scopes keeps the longest"], ["left out, lane", fmtCount(h.lane.merged)]];
    case "state": {
      const S = M.states;
      const st = S.state[h.i], out = [STATE_NAMES[st] || "state", ["from", fmtTime(S.t0[h.i])], ["for", fmtDur(S.t1[h.i] - S.t0[h.i])]];
      if (S.cpu[h.i] !== 0xffff) out.push(["cpu", String(S.cpu[h.i])]);
      if (st === 3) out.push(["kernel state", S.kstate[h.i] & 2 ? "D (uninterruptible)" : "S (sleeping)"]);
      if (S.waker[h.i] !== 0xffffffff && st >= 2 && st <= 3) out.push(["woken by", "tid " + S.waker[h.i]]);
      return out;
    }
    case "cpu": {
      const C = M.cpus;
      return [this.threadName(h.lane), ["cpu", String(h.cpu)], ["from", fmtTime(C.t0[h.i])], ["for", fmtDur(C.t1[h.i] - C.t0[h.i])], ["process", (h.lane.proc.name || "") + " (pid " + h.lane.proc.pid + ")"]];
    }
    case "proc": {
      const p = h.proc;
      return [(p.name || "process") + " (pid " + p.pid + ")", ["host", p.host || "–"], ["command", p.cmd || "–"], "Click to " + (p.collapsed ? "unfold" : "fold") + "."];
    }
    case "lane": {
      const l = h.lane;
      if (l.kind === LANE_THREAD) return [this.threadName(l), ["scopes", fmtCount(l.scopes)], ["busy", fmtDur(l.busy)], ["process", (l.proc.name || "") + " (pid " + l.proc.pid + ")"]];
      if (l.kind === LANE_ASYNC) return ["async spans of pid " + l.proc.pid, "Spans that may start and stop on different threads, packed into rows."];
      if (l.kind === LANE_CPU) return ["CPU " + l.cpu, "When each thread of pid " + l.proc.pid + " ran on this CPU, in the thread's colour; gaps: other tasks, or idle."];
      return [l.name !== null ? l.name : "value", ["samples", fmtCount(l.values ? l.values.count : 0)]];
    }
    case "flame": {
      const f = h.flame, g = f.g, i = h.i;
      const out = [f.label(i), ["total", fmtDur(g.total[i]) + (g.total[0] ? "  (" + (100 * g.total[i] / g.total[0]).toFixed(2) + "%)" : "")]];
      if (i > 0) out.push(["self", fmtDur(f.self(i))], ["count", fmtCount(g.count[i])], ["path", f.path(i).join(" › ")]);
      out.push(i === f.focus ? "Click a frame above to zoom out." : "Click to zoom in.");
      return out;
    }
    default: return null;
    }
  }

  spanLines(i, short) {
    const M = this.M, sp = M.spans, site = M.sites[sp.site[i]], flag = sp.flag[i];
    const row = sp.rowOf(i), lane = row.lane, x = sp.extra(i);
    const out = [site.name + (flag & F_NAME_INCOMPLETE ? "…" : "")];
    if (flag & F_UNFINISHED) out.push(["duration", "unfinished: its stop never came"]);
    else out.push(["duration", fmtDur(sp.dur(i))]);
    if (!(flag & F_ASYNC)) out.push(["self", fmtDur(sp.self(i))]);
    out.push(["start", fmtTime(sp.start[i])]);
    if (flag & F_ASYNC) {
      out.push(["process", (lane.proc.name || "") + " (pid " + lane.proc.pid + ")"]);
      if (x) out.push(["threads", "started on tid " + x.tid + ", stopped on tid " + x.endTid]);
    } else {
      out.push(["thread", this.threadName(lane)], ["depth", String(row.depth)]);
    }
    if (site.file) out.push(["source", site.file + (site.line ? ":" + site.line : "") + (site.func ? " (" + site.func + ")" : "")]);
    if (x && x.sched) {
      const s = x.sched, left = sp.dur(i) - s.oncpu - s.runnable - s.blocked;
      out.push(["on-CPU", fmtDur(s.oncpu)], ["runnable", fmtDur(s.runnable)], ["blocked", fmtDur(s.blocked)], ["unknown", fmtDur(left > 0 ? left : 0)]);
    }
    if (!short) {
      out.push(["process", (lane.proc.name || "") + " (pid " + lane.proc.pid + ")"]);
      out.push(["start (ns)", String(sp.start[i]) + " after the origin"]);
      if (site.given) out.push(["colour", hexColor(site.colorValue) + " (given)"]);
      if (x && x.group) out.push(["group", x.group.toString()]);
      const st = M.stats.find(s => s.name === site.name && s.kind === (flag & F_ASYNC ? "async" : "scope"));
      if (st) out.push(["this name", fmtCount(st.count) + " of them: mean " + fmtDur(st.mean) + ", p50 " + fmtDur(st.p50) + ", p95 " + fmtDur(st.p95) + ", max " + fmtDur(st.max)]);
    }
    if (flag & F_NAME_INCOMPLETE) out.push("Part of the name was lost.");
    if (flag & F_UNCERTAIN) out.push("The agent could not trust this time's conversion.");
    return out;
  }

  /* ---- panels ---- */

  details(i) {
    const box = $("details");
    clear(box);
    if (i < 0) {
      box.appendChild(el("p", "dim", "Click a scope on the timeline to see it here."));
      return;
    }
    const lines = this.spanLines(i, false);
    box.appendChild(el("h2", "", lines[0]));
    const dl = el("dl");
    for (const l of lines.slice(1)) {
      if (typeof l === "string") { box.appendChild(el("p", "dim", l)); continue; }
      dl.appendChild(el("dt", "", l[0]));
      dl.appendChild(el("dd", "", l[1]));
    }
    box.appendChild(dl);
    const sp = this.M.spans, name = this.M.sites[sp.site[i]].name;
    const zoom = el("button", "", "Zoom to it (F)");
    zoom.type = "button";
    zoom.addEventListener("click", () => this.tl.show(sp.start[i], sp.end[i], i));
    const all = el("button", "", "Highlight every instance");
    all.type = "button";
    all.addEventListener("click", () => { $("search").value = "=" + name; this.find("=" + name); });
    box.appendChild(zoom);
    box.appendChild(all);
    if (this.tl.clicked) this.showTab("details");
  }

  captures() {
    const box = $("captures");
    clear(box);
    for (const s of this.M.streams) {
      const p = s.proc;
      box.appendChild(el("h2", "", (p && p.name ? p.name : "process") + " (pid " + (p ? p.pid : "?") + ")"));
      const dl = el("dl");
      const row = (k, v) => { dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v)); };
      row("capture", s.file || "–");
      row("host", p && p.host ? p.host : "–");
      row("command", p && p.cmd ? p.cmd : "–");
      row("start", (s.wall || "–") + " (" + fmtTime(s.first) + ")");
      row("duration", fmtDur(s.last - s.first));
      row("events", fmtCount(s.records) + " records: " + fmtCount(s.scopes) + " scopes, " + fmtCount(s.spans) + " async spans, " + fmtCount(s.values) + " values, " + fmtCount(s.logs) + " log lines, " + fmtCount(s.markers) + " markers");
      row("threads", fmtCount(s.threads));
      row("loss", s.lost > 0 || s.logLost > 0 ? fmtCount(s.lost) + " records, " + fmtCount(s.logLost) + " log records" : "none");
      row("equation", "claimed " + fmtCount(s.claimed) + " == delivered " + fmtCount(s.delivered) + " + lost " + fmtCount(s.lost) + ": " + s.equation);
      row("complete", s.complete ? "yes (end of stream)" : "no: no end of stream");
      box.appendChild(dl);
    }
    const M = this.M, origin = M.meta.get("origin_ns");
    box.appendChild(el("p", "dim", "Times are shown after the origin, the earliest record of the captures: CLOCK_MONOTONIC " + (origin ? origin.s : "?") + " ns. The page holds " + fmtCount(M.spans.n) + " spans in " + fmtCount(M.dataBytes) + " bytes of data."));
  }

  /* ---- the live view: a newer block of the same streams ---- */

  update(D, follow) {
    const M = buildModel(D), tl = this.tl;
    this.M = tl.M = this.flame.M = this.stats.M = M;
    this.flame.g = null;
    tl.selected = -1; /* its index was the older block's */
    this.details(-1);
    tl.layout();
    if (follow) {
      const w = Math.max(tl.t1 - tl.t0, 1000);
      tl.setView(M.end - w * 0.97, M.end + w * 0.03, true);
    }
    if (this.search.text) this.find(this.search.text);
    M.stats = windowStats(M, tl.t0, tl.t1); /* the live view's: over the view */
    this.header();
    clear($("notices"));
    this.notices();
    this.stats.body();
    clear($("captures"));
    this.captures();
    if (this.tab === "flame" && this.ready) this.flameFor(tl.range);
    tl.relayout();
  }

  /* ---- first frame, and what tests read ---- */

  drawn() {
    if (!isNaN(this.timing.firstDrawMs)) return;
    this.timing.firstDrawMs = performance.now();
    this.ready = true;
    document.documentElement.dataset.ready = "1";
    /* the flame graph of everything after the first frame, not before it */
    setTimeout(() => {
      this.showTab(this.tab);
      this.timing.flameMs = performance.now();
    }, 0);
  }

  expose() {
    const page = this;
    window.orbit = Object.freeze({
      timing: () => Object.assign({}, page.timing),
      view: () => [page.tl.t0, page.tl.t1],
      end: () => page.M.end,
      range: () => (page.tl.range ? [page.tl.range.a, page.tl.range.b] : null),
      selected: () => {
        const i = page.tl.selected;
        if (i < 0) return null;
        const row = page.M.spans.rowOf(i);
        return { index: i, name: page.M.sites[page.M.spans.site[i]].name, start: page.M.spans.start[i], end: page.M.spans.end[i], lane: row.lane.name, depth: row.depth };
      },
      found: () => ({ count: page.search.list ? page.search.list.length : 0, index: page.search.index }),
      threadColor: lane => page.tl.threadColor(lane),
      counts: () => ({ spans: page.M.spans.n, lanes: page.M.lanes.length, values: page.M.values.t.length, logs: page.M.logs.t.length, procs: page.M.procs.length, stats: page.M.stats.length, merged: (page.M.meta.get("merged") || { v: 0 }).v }),
      names: () => ({
        lanes: page.M.lanes.map(l => l.name),
        sites: page.M.sites.map(s => s.name),
        procs: page.M.procs.map(p => ({ name: p.name, host: p.host, cmd: p.cmd })),
        logs: Array.from(page.M.logs.text, t => page.M.strings.get(t)),
      }),
      flame: () => (page.flame.g ? { nodes: page.flame.g.n, total: page.flame.g.total[0], range: page.flame.range ? [page.flame.range.a, page.flame.range.b] : null } : null),
      /* ms per frame drawn at [t0, t1] (default: the view), n frames */
      drawCost: (n, t0, t1) => {
        const tl = page.tl, v = [tl.t0, tl.t1];
        if (t0 !== undefined) { tl.t0 = t0; tl.t1 = t1; }
        const start = performance.now();
        for (let k = 0; k < (n || 10); k++) tl.draw();
        const ms = (performance.now() - start) / (n || 10);
        tl.t0 = v[0];
        tl.t1 = v[1];
        tl.redraw();
        return ms;
      },
      tracks: () => page.tl.tracks.map(t => ({ kind: t.kind, lane: t.lane && t.kind !== "cpu" ? t.lane.name : null, cpu: t.kind === "cpu" ? t.lane.cpu : null, y: t.y, h: t.h })),
      laneArea: () => ({ x: GUTTER_W, y: RULER_H, w: page.tl.cw - GUTTER_W, h: Math.min(page.tl.ch, page.tl.contentH) - RULER_H, box: $("timeline").getBoundingClientRect().toJSON() }),
    });
  }
}

function start() {
  try {
    if (document.documentElement.dataset.mode === "live") new LiveView();
    else new Page(loadData(), null);
  } catch (err) {
    const box = $("notices");
    box.hidden = false;
    box.appendChild(el("div", "notice bad", "This page could not be shown: " + (err && err.message ? err.message : String(err))));
    document.documentElement.dataset.ready = "error";
    throw err;
  }
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
