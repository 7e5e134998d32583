/* stats.js — the statistics table: per name count, total, self, mean,
 * p50, p95, p99, max (orbit-replay's own statistics of every span, not
 * only the ones the page keeps); sortable by any column; a click on a row
 * highlights that name's instances on the timeline (page.js), Enter on
 * it then steps through them. */

const STAT_COLUMNS = [
  ["name", "Name", false],
  ["kind", "Kind", false],
  ["count", "Count", true],
  ["total", "Total", true],
  ["self", "Self", true],
  ["mean", "Mean", true],
  ["p50", "p50", true],
  ["p95", "p95", true],
  ["p99", "p99", true],
  ["max", "Max", true],
];
const STAT_ROWS_SHOWN = 500;

class Stats {
  constructor(M, table, more, hooks) {
    this.M = M;
    this.table = table;
    this.more = more;
    this.hooks = hooks;
    this.key = "total";
    this.desc = true;
    this.limit = STAT_ROWS_SHOWN;
    this.active = null;
    this.head();
    this.body();
  }

  head() {
    const thead = this.table.tHead, tr = el("tr");
    clear(thead);
    for (const [key, title, num] of STAT_COLUMNS) {
      const th = el("th", num ? "num" : "", title + (key === this.key ? (this.desc ? " ▾" : " ▴") : ""));
      th.tabIndex = 0;
      th.title = "Sort by " + title.toLowerCase();
      const sort = () => {
        if (this.key === key) this.desc = !this.desc;
        else { this.key = key; this.desc = num; }
        this.head();
        this.body();
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", e => { if (e.key === "Enter") sort(); });
      tr.appendChild(th);
    }
    thead.appendChild(tr);
  }

  body() {
    const rows = this.M.stats.slice(), k = this.key, sign = this.desc ? -1 : 1;
    rows.sort((a, b) => {
      const x = a[k], y = b[k];
      if (typeof x === "string") return sign * x.localeCompare(y);
      return sign * ((isNaN(x) ? -1 : x) - (isNaN(y) ? -1 : y));
    });
    const tbody = this.table.tBodies[0];
    clear(tbody);
    this.rows = new Map();
    for (const r of rows.slice(0, this.limit)) {
      const tr = el("tr");
      tr.tabIndex = 0;
      const name = el("td", "name", r.name);
      name.title = r.name;
      tr.appendChild(name);
      tr.appendChild(el("td", "kind", r.kind));
      tr.appendChild(el("td", "num", fmtCount(r.count)));
      const ap = r.approx ? "~" : "";
      for (const f of ["total", "self", "mean"]) tr.appendChild(el("td", "num", isNaN(r[f]) ? "–" : fmtDur(r[f])));
      for (const f of ["p50", "p95", "p99"]) tr.appendChild(el("td", "num", ap + fmtDur(r[f])));
      tr.appendChild(el("td", "num", fmtDur(r.max)));
      if (r.unfinished > 0) tr.title = fmtCount(r.unfinished) + " unfinished";
      const pick = () => this.hooks.onPick(this.active === r ? null : r);
      tr.addEventListener("click", pick);
      tr.addEventListener("keydown", e => {
        if (e.key !== "Enter") return;
        e.stopPropagation();
        if (this.active === r) this.hooks.onStep(e.shiftKey ? -1 : 1); /* Enter again: the instances */
        else pick();
      });
      if (this.active === r) tr.classList.add("on");
      this.rows.set(r, tr);
      tbody.appendChild(tr);
    }
    clear(this.more);
    if (rows.length > this.limit) {
      const b = el("button", "", "Show all " + fmtCount(rows.length) + " names");
      b.type = "button";
      b.addEventListener("click", () => { this.limit = Infinity; this.body(); });
      this.more.appendChild(b);
    } else if (!rows.length) {
      this.more.appendChild(el("p", "dim", "No scopes or async spans."));
    }
  }

  /* Marks the row of the highlighted name (r: a STAT row, or null). */
  mark(r) {
    if (this.active && this.rows.has(this.active)) this.rows.get(this.active).classList.remove("on");
    this.active = r;
    if (r && this.rows.has(r)) this.rows.get(r).classList.add("on");
  }
}
