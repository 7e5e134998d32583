/* model.js — the capture as the page draws it: processes, their lanes,
 * the spans of each lane in rows by depth, value tracks, log lines, loss
 * marks, statistics, built once from the data block's tables (data.js;
 * their columns are listed in replay/html/replay_export_html.c).
 *
 * Spans are arrays indexed like the SPAN table: sorted by (lane, depth,
 * start), so a row (one lane, one depth) is a range [first, first + count)
 * and within it starts ascend. maxEnd[i] is the latest end in the row up
 * to i: the first span that can reach a time t is found by binary search
 * even when spans of a row overlap (after loss, depths can be off). */

const F_ASYNC = 1, F_UNFINISHED = 2, F_NAME_INCOMPLETE = 4, F_ATTRS = 8, F_MARKER = 16;
const F_UNCERTAIN = 64; /* ORBIT_RP_TIME_UNTRUSTED: a time the agent could not trust */
const LANE_THREAD = 1, LANE_ASYNC = 2, LANE_VALUE = 3;
const LANE_CPU = 4; /* not a LANE row: a CPU track of a process (CPUS) */
const BIG32 = 0xffffffff;

function buildModel(D) {
  const S = D.strings, tab = D.tab;
  const M = {
    strings: S, meta: D.meta, dataBytes: D.bytes,
    procs: [], streams: [], lanes: [], rows: [], sites: [], stats: [], loss: [],
    end: 0, lossTotal: 0,
  };

  const P = tab("PROC");
  for (let i = 0; i < P.rows; i++)
    M.procs.push({
      index: i, pid: P.cols.pid[i], name: S.get(P.cols.name[i]), host: S.get(P.cols.host[i]),
      cmd: S.get(P.cols.cmd[i]), lanes: [], loss: [], streams: [], cpus: [], collapsed: false,
    });

  const ST = tab("STRM"), sc = ST.cols;
  for (let i = 0; i < ST.rows; i++) {
    const s = {
      proc: M.procs[sc.proc[i]], file: S.get(sc.file[i]), first: sc.frst[i], last: sc.last[i],
      wall: S.get(sc.wall[i]), records: sc.recs[i], scopes: sc.scop[i], spans: sc.span[i],
      values: sc.vals[i], logs: sc.logs[i], markers: sc.mark[i], threads: sc.thrd[i],
      claimed: sc.clmd[i], delivered: sc.dlvd[i], lost: sc.lost[i], logLost: sc.lrec[i],
      equation: ["fails", "holds", "unknown"][sc.eq[i]] || "unknown",
      logEquation: ["fails", "holds", "unknown"][sc.logq[i]] || "unknown",
      complete: !!sc.cmpl[i], handshake: !!sc.hand[i],
    };
    M.streams.push(s);
    if (s.proc) s.proc.streams.push(s);
    M.end = Math.max(M.end, s.last);
  }

  const L = tab("LANE"), lc = L.cols;
  for (let i = 0; i < L.rows; i++) {
    const lane = {
      index: i, kind: lc.kind[i], proc: M.procs[lc.proc[i]], tid: lc.tid[i],
      name: S.get(lc.name[i]), color: lc.colr[i], attrs: lc.attr[i], merged: lc.mrgd[i],
      scopes: lc.scop[i], busy: lc.busy[i],
      rows: [], logs: null, values: null, density: null, states: null, last: 0,
    };
    M.lanes.push(lane);
    lane.proc.lanes.push(lane);
  }

  const SI = tab("SITE");
  for (let i = 0; i < SI.rows; i++) {
    const c = SI.cols;
    M.sites.push({
      name: S.get(c.name[i]) || "", color: c.attr[i] ? givenColor(c.colr[i]) : null, colorValue: c.colr[i],
      given: !!c.attr[i], file: S.get(c.file[i]), func: S.get(c.func[i]), line: c.line[i],
    });
  }
  if (M.sites.length === 0) M.sites.push({ name: "", color: null, given: false });

  buildSpans(M, tab);
  buildValues(M, tab);
  buildLogs(M, tab);
  buildLoss(M, tab);
  buildStats(M, tab);
  buildDensity(M, tab);
  buildStates(M, tab);
  buildCpus(M, tab);
  extendUnfinished(M);
  return M;
}

function buildSpans(M, tab) {
  const SP = tab("SPAN"), c = SP.cols, n = SP.rows;
  const R = tab("ROWS"), rc = R.cols;
  const sovr = new Map(), dovr = new Map();
  const SO = tab("SOVR"), DO = tab("DOVR");
  for (let i = 0; i < SO.rows; i++) sovr.set(SO.cols.idx[i], SO.cols.t[i]);
  for (let i = 0; i < DO.rows; i++) dovr.set(DO.cols.idx[i], [DO.cols.dur[i], DO.cols.self[i]]);
  const start = new Float64Array(n), end = new Float64Array(n), maxEnd = new Float64Array(n);
  const rowFirst = new Uint32Array(R.rows);
  const dt = c.dt, dur = c.dur;
  for (let r = 0; r < R.rows; r++) {
    const row = { index: r, lane: M.lanes[rc.lane[r]], depth: rc.dpth[r], first: rc.frst[r], count: rc.cnt[r] };
    M.rows.push(row);
    rowFirst[r] = row.first;
    row.lane.rows[row.depth] = row;
    let t = rc.t0[r], me = 0;
    for (let i = row.first, e = row.first + row.count; i < e; i++) {
      const d = dt[i];
      t = d === BIG32 ? sovr.get(i) : t + d;
      start[i] = t;
      const du = dur[i] === BIG32 ? dovr.get(i)[0] : dur[i];
      end[i] = t + du;
      if (end[i] > me) me = end[i];
      maxEnd[i] = me;
    }
    if (me > row.lane.last) row.lane.last = me;
    if (me > M.end) M.end = me;
  }
  for (const lane of M.lanes) lane.depths = lane.rows.length;
  const extra = new Map();
  const X = tab("SEXT"), xc = X.cols;
  for (let i = 0; i < X.rows; i++)
    extra.set(xc.idx[i], {
      group: (BigInt(xc.gphi[i]) << 32n) | BigInt(xc.gplo[i]), tid: xc.stid[i], endTid: xc.etid[i],
      sched: xc.schd[i] ? { oncpu: xc.oncp[i], runnable: xc.runb[i], blocked: xc.blkd[i] } : null,
    });
  M.spans = {
    n, start, end, maxEnd, site: c.site || new Uint32Array(n), flag: c.flag || new Uint8Array(n),
    dur: i => (dur[i] === BIG32 ? dovr.get(i)[0] : dur[i]),
    self: i => (c.self[i] === BIG32 ? dovr.get(i)[1] : c.self[i]),
    extra: i => extra.get(i) || null,
    rowOf: i => M.rows[Math.max(0, lowerBound(rowFirst, 0, rowFirst.length, i + 1) - 1)],
    parent: null,
  };
}

/* An unfinished span has no end: it is drawn to the last time its lane
 * shows (a capture that knows how long it was open gives that end, later
 * than its start, and it is kept). */
function extendUnfinished(M) {
  const sp = M.spans;
  for (const row of M.rows) {
    const lane = row.lane;
    const limit = lane.kind === LANE_ASYNC ? lane.proc.streams.reduce((a, s) => Math.max(a, s.last), lane.last) : lane.last;
    let me = 0;
    for (let i = row.first, e = row.first + row.count; i < e; i++) {
      if ((sp.flag[i] & F_UNFINISHED) && sp.end[i] <= sp.start[i])
        sp.end[i] = Math.max(sp.start[i], limit);
      if (sp.end[i] > me) me = sp.end[i];
      sp.maxEnd[i] = me;
    }
  }
}

function buildValues(M, tab) {
  const V = tab("VALS"), VR = tab("VROW");
  M.values = { t: V.cols.t || new Float64Array(0), v: V.cols.v || new Float64Array(0) };
  for (let r = 0; r < VR.rows; r++) {
    const lane = M.lanes[VR.cols.lane[r]], first = VR.cols.frst[r], count = VR.cols.cnt[r];
    let lo = Infinity, hi = -Infinity;
    for (let i = first; i < first + count; i++) {
      const v = M.values.v[i];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    lane.values = { first, count, lo, hi };
    if (count) M.end = Math.max(M.end, M.values.t[first + count - 1]);
  }
}

function buildLogs(M, tab) {
  const G = tab("LOGS"), c = G.cols;
  M.logs = { t: c.t || new Float64Array(0), text: c.text || new Uint32Array(0), flag: c.flag || new Uint8Array(0) };
  for (let i = 0; i < G.rows;) {
    const lane = M.lanes[c.lane[i]];
    let j = i;
    while (j < G.rows && c.lane[j] === c.lane[i]) j++;
    lane.logs = { first: i, count: j - i };
    lane.last = Math.max(lane.last, c.t[j - 1]);
    M.end = Math.max(M.end, c.t[j - 1]);
    i = j;
  }
}

function buildLoss(M, tab) {
  const X = tab("LOSS"), c = X.cols;
  for (let i = 0; i < X.rows; i++) {
    const m = { proc: M.procs[c.proc[i]], from: c.from[i], to: c.to[i], count: c.cnt[i], ring: c.ring[i], log: !!(c.flag[i] & 32) };
    M.loss.push(m);
    m.proc.loss.push(m);
    M.lossTotal += m.count;
  }
  for (const p of M.procs) p.loss.sort((a, b) => a.from - b.from);
}

function buildStats(M, tab) {
  const X = tab("STAT"), c = X.cols;
  for (let i = 0; i < X.rows; i++)
    M.stats.push({
      kind: c.kind[i] ? "async" : "scope", name: M.strings.get(c.name[i]) || "", count: c.cnt[i],
      total: c.totl[i], self: c.kind[i] ? NaN : c.self[i], mean: c.mean[i], min: c.min[i],
      p50: c.p50[i], p95: c.p95[i], p99: c.p99[i], max: c.max[i], unfinished: c.unf[i], approx: !!c.apx[i],
    });
}

function buildDensity(M, tab) {
  const X = tab("DENS"), B = tab("DBIN");
  for (let i = 0; i < X.rows; i++) {
    const lane = M.lanes[X.cols.lane[i]], first = X.cols.frst[i];
    const bins = B.cols.c.subarray(first, first + 256);
    let max = 0;
    for (const v of bins) if (v > max) max = v;
    lane.density = { lo: X.cols.lo[i], w: X.cols.w[i], bins, max };
  }
}

/* Thread states: intervals per thread lane, when a capture
 * has them; the timeline then draws a state track under the lane. */
function buildStates(M, tab) {
  const X = tab("THST"), c = X.cols;
  M.states = {
    t0: c.t0 || new Float64Array(0), t1: c.t1 || new Float64Array(0), state: c.stat || new Uint8Array(0),
    cpu: c.cpu || new Uint16Array(0), kstate: c.kst || new Uint32Array(0), waker: c.wakr || new Uint32Array(0),
  };
  for (let i = 0; i < X.rows;) {
    let j = i;
    while (j < X.rows && c.lane[j] === c.lane[i]) j++;
    M.lanes[c.lane[i]].states = { first: i, count: j - i };
    i = j;
  }
}

/* CPU tracks: which of a process's thread lanes ran on each
 * CPU, rows sorted by (proc, cpu, t0); one track per (process, CPU). */
function buildCpus(M, tab) {
  const X = tab("CPUS"), c = X.cols;
  M.cpus = {
    t0: c.t0 || new Float64Array(0), t1: c.t1 || new Float64Array(0),
    lane: c.lane || new Uint32Array(0),
  };
  for (let i = 0; i < X.rows;) {
    let j = i;
    while (j < X.rows && c.proc[j] === c.proc[i] && c.cpu[j] === c.cpu[i]) j++;
    const p = M.procs[c.proc[i]];
    if (p) p.cpus.push({ kind: LANE_CPU, cpu: c.cpu[i], proc: p, first: i, count: j - i });
    i = j;
  }
}

/* The scope around each scope (-1: none): the span one row up in the same
 * lane that starts last at or before it. Built when the flame graph first
 * needs it. */
function parents(M) {
  const sp = M.spans;
  if (sp.parent) return sp.parent;
  const par = new Int32Array(sp.n).fill(-1);
  for (const row of M.rows) {
    if (row.lane.kind !== LANE_THREAD || row.depth === 0) continue;
    const up = row.lane.rows[row.depth - 1];
    if (!up) continue;
    const ue = up.first + up.count;
    let k = up.first;
    for (let i = row.first, e = row.first + row.count; i < e; i++) {
      const s = sp.start[i];
      while (k + 1 < ue && sp.start[k + 1] <= s) k++;
      if (sp.start[k] <= s && sp.end[k] >= s) par[i] = k;
    }
  }
  sp.parent = par;
  return par;
}

/* Indices of spans whose name matches, in start order. test(site) says
 * whether a site's name matches. */
function findSpans(M, test) {
  const sp = M.spans, match = new Uint8Array(M.sites.length);
  let any = false;
  for (let s = 0; s < M.sites.length; s++) if (test(M.sites[s].name)) { match[s] = 1; any = true; }
  if (!any) return { match, list: new Uint32Array(0) };
  let n = 0;
  for (let i = 0; i < sp.n; i++) n += match[sp.site[i]];
  const list = new Uint32Array(n);
  n = 0;
  for (let i = 0; i < sp.n; i++) if (match[sp.site[i]]) list[n++] = i;
  const st = sp.start;
  const sorted = Array.from(list).sort((a, b) => st[a] - st[b] || a - b);
  return { match, list: Uint32Array.from(sorted) };
}
