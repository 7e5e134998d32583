"""replay_perfetto.py — orbit-replay --perfetto, decoded with
`protoc --decode=perfetto.protos.Trace` against replay/export/perfetto_subset.proto
(Perfetto's own trace processor is not available offline), and its
structure checked the way the trace processor reads it:

 - the first packet is a ClockSnapshot making CLOCK_MONOTONIC (3) the trace
   clock, and clears the sequence's incremental state;
 - every packet is on sequence 1; every event says clock 3 and needs the
   incremental state; a track is described before its first event; an
   interned name is defined (once) before its first use;
 - events sorted by timestamp (file order on ties, as the trace processor's
   sorter keeps it) give, per thread track, begin/end pairs that nest into
   exactly the CSV's scopes and depths, with their colour and group id
   annotations; async tracks give the CSV's spans;
 - counters and instants match the values and log lines of the summary.

    python3 replay_perfetto.py ORBIT_REPLAY PROTO_DIR CAPTURE
"""
import json
import sys
from collections import Counter, defaultdict

sys.path.insert(0, __import__("os").path.dirname(__file__))
from replay_common import MARKS, Replay, as_utf8, check, one, protoc_decode, read_csv  # noqa: E402


def walk(packets):
    """Checks the sequence rules; returns (tracks, events) where events are
    (ts, file index, track, type, name, annotations)."""
    first = packets[0]
    cs = one(first, "clock_snapshot")
    check(cs is not None and one(cs, "primary_trace_clock") == "BUILTIN_CLOCK_MONOTONIC",
          "first packet is not a clock snapshot on CLOCK_MONOTONIC")
    check(one(first, "sequence_flags") == "1", "first packet does not clear the state")
    tracks, names, events = {}, {}, []
    for i, p in enumerate(packets):
        check(one(p, "trusted_packet_sequence_id") == "1", "packet %d off sequence 1" % i)
        for inter in p.get("interned_data", []):
            for en in inter.get("event_names", []):
                iid, name = one(en, "iid"), one(en, "name")
                check(iid not in names, "iid %s defined twice" % iid)
                names[iid] = name
        td = one(p, "track_descriptor")
        if td is not None:
            uuid = one(td, "uuid")
            if uuid in tracks:
                old = tracks[uuid]
                check(one(old, "thread", {}).get("tid") == one(td, "thread", {}).get("tid"),
                      "track %s described as another thread" % uuid)
            tracks[uuid] = td
        te = one(p, "track_event")
        if te is None:
            continue
        check(one(p, "timestamp_clock_id") == "3", "event %d not on clock 3" % i)
        check(one(p, "sequence_flags") == "2", "event %d does not need the state" % i)
        uuid = one(te, "track_uuid")
        check(uuid in tracks, "event %d on track %s not described before" % (i, uuid))
        name = one(te, "name")
        if one(te, "name_iid") is not None:
            check(one(te, "name_iid") in names, "event %d uses an undefined iid" % i)
            name = names[one(te, "name_iid")]
        ann = {one(a, "name"): one(a, "string_value") or one(a, "uint_value") or
               one(a, "bool_value") for a in te.get("debug_annotations", [])}
        events.append((int(one(p, "timestamp")), i, uuid, one(te, "type"), name, ann, te))
    return tracks, events


def slices(tracks, events):
    """Begin/end pairs per track after the sort: (uuid, name, start, end,
    depth, marks, attrs)."""
    stacks, out = defaultdict(list), []
    for ts, _, uuid, typ, name, ann, _ in sorted(events, key=lambda e: (e[0], e[1])):
        if typ == "TYPE_SLICE_BEGIN":
            stacks[uuid].append((name, ts, ann))
        elif typ == "TYPE_SLICE_END":
            check(stacks[uuid], "end without begin on track %s at %d" % (uuid, ts))
            name, start, ann = stacks[uuid].pop()
            attrs = (ann["color"], int(ann["group"])) if "color" in ann else None
            marks = frozenset(k for k in ann if k in MARKS)
            out.append((uuid, name, start, ts, len(stacks[uuid]), marks, attrs))
    for uuid, st in stacks.items():
        check(not st, "track %s: %d slices never end" % (uuid, len(st)))
    return out


def main():
    rp = Replay(sys.argv[1])
    proto_dir, capture = sys.argv[2], sys.argv[3]
    try:
        csv_path, trace, js = rp.path("x.csv"), rp.path("x.pftrace"), rp.path("s.json")
        rp.run(capture, "--csv", csv_path, "--perfetto", trace, "--json", js, "-q")
        rows = read_csv(csv_path)
        with open(js) as f:
            summary = json.load(f)
        packets = protoc_decode(proto_dir, trace).get("packet", [])
        check(packets, "no packets")
        tracks, events = walk(packets)
        got_scopes, got_spans = Counter(), Counter()
        for uuid, name, start, end, depth, marks, attrs in slices(tracks, events):
            td = tracks[uuid]
            th = one(td, "thread")
            if th is not None:
                got_scopes[(int(one(th, "tid")), name, start, end, depth, marks,
                            attrs)] += 1
            else:
                check(one(td, "parent_uuid") is not None, "async track without a parent")
                got_spans[(name, start, end, marks, attrs)] += 1

        def attrs_of(r):
            return (r["color"], int(r["group_id"])) if r["color"] else None
        want_scopes = Counter((r["tid"], as_utf8(r["name"]).replace("\0", "\ufffd"),
                               r["start_ns"], r["end_ns"], r["depth"], frozenset(r["marks"]),
                               attrs_of(r)) for r in rows if r["kind"] == "scope")
        check(got_scopes == want_scopes, "slices differ from the CSV scopes:\n  extra %s\n"
              "  missing %s" % (sorted(got_scopes - want_scopes)[:5],
                                sorted(want_scopes - got_scopes)[:5]))
        want_spans = Counter((as_utf8(r["name"]), r["start_ns"], r["end_ns"],
                              frozenset(r["marks"]), attrs_of(r))
                             for r in rows if r["kind"] == "async")
        check(got_spans == want_spans, "async slices %s, want %s" % (got_spans, want_spans))
        counters = [e for e in events if e[3] == "TYPE_COUNTER"]
        check(len(counters) == summary["values"], "%d counters, %d values" %
              (len(counters), summary["values"]))
        for c in counters:
            counter_track = tracks[c[2]]
            check(one(counter_track, "counter") is not None, "counter on a non-counter track")
        instants = [e for e in events if e[3] == "TYPE_INSTANT"]
        check(len(instants) == summary["log_lines"], "%d instants, %d log lines" %
              (len(instants), summary["log_lines"]))
        pids = {s["pid"] for c in summary["captures"] for s in c["streams"]}
        procs = {int(one(one(t, "process"), "pid")) for t in tracks.values()
                 if one(t, "process") is not None}
        check(procs == pids, "process tracks %s, pids %s" % (procs, pids))
        for r in rows:
            if r["thread_name"] and r["kind"] == "scope":
                ths = [one(t, "thread") for t in tracks.values() if one(t, "thread")]
                names = {one(th, "thread_name") for th in ths if int(one(th, "tid")) == r["tid"]}
                check(as_utf8(r["thread_name"]) in names, "thread %d not named %r" %
                      (r["tid"], r["thread_name"]))
    finally:
        rp.cleanup()
    print("ok: %d packets" % len(packets))


main()
