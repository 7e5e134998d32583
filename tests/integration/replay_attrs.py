"""replay_attrs.py — colours and group ids from a real traced program
(replay_attrs.c, run here with ORBIT_CAPTURE) into every output that can
carry them (docs/api.md): the CSV's color and group_id columns, Chrome's
args.color and args.group on scopes and async begins, Perfetto's debug
annotations color and group on slice begins. Events without them carry
none; value counters carry none (Chrome's counter args are its series).

    python3 replay_attrs.py ORBIT_REPLAY PROTO_DIR TRACED_PROGRAM
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import Replay, check, one, protoc_decode, read_csv  # noqa: E402

U64 = 2**64 - 1
WANT = {  # name: (color, group) for each of the three iterations; None: none
    "grouped": [("#11223344", 1000 + i) for i in range(3)],
    "colored": [("#ff0000ff", 0)] * 3,
    "plain": [None] * 3,
    "started": [("#00ff00ff", U64 - i) for i in range(3)],
    "started plain": [None] * 3,
    "async colored": [("#0000ffff", 0)] * 3,
}


def check_rows(got, what):
    for name, want in WANT.items():
        check(sorted(got.get(name, []), key=str) == sorted(want, key=str),
              "%s: %s has %s, want %s" % (what, name, got.get(name), want))


def main():
    rp = Replay(sys.argv[1])
    proto_dir, program = sys.argv[2], sys.argv[3]
    try:
        cap = rp.path("attrs.orbit.zst")
        env = dict(os.environ, ORBIT_CAPTURE=cap)
        env.pop("ORBIT_COLLECTOR", None)
        p = subprocess.run([program], env=env, capture_output=True)
        check(p.returncode == 0, "traced program: %d %s" % (p.returncode, p.stderr))
        csv_path, chrome, trace = rp.path("a.csv"), rp.path("a.json"), rp.path("a.pftrace")
        rp.run(cap, "--csv", csv_path, "--chrome", chrome, "--perfetto", trace, "-q")

        got = {}
        for r in read_csv(csv_path):
            attrs = (r["color"], int(r["group_id"])) if r["color"] else None
            check(bool(r["color"]) == bool(r["group_id"]), "row %r" % r)
            got.setdefault(r["name"], []).append(attrs)
        check_rows(got, "CSV")

        with open(chrome) as f:
            events = json.load(f)["traceEvents"]
        got = {}
        for e in events:
            if e["ph"] in ("X", "b"):
                args = e.get("args", {})
                attrs = (args["color"], int(args["group"])) if "color" in args else None
                check(("color" in args) == ("group" in args), "event %r" % e)
                check(not isinstance(args.get("group"), int), "group as a JSON number")
                got.setdefault(e["name"], []).append(attrs)
            elif e["ph"] == "e":
                check("args" not in e, "async end with args %r" % e)
            elif e["ph"] == "C":
                check(list(e["args"]) == ["value"], "counter args %r" % e)
        check_rows(got, "Chrome")

        packets = protoc_decode(proto_dir, trace).get("packet", [])
        names, got = {}, {}
        for pk in packets:
            for inter in pk.get("interned_data", []):
                for en in inter.get("event_names", []):
                    names[one(en, "iid")] = one(en, "name")
            te = one(pk, "track_event")
            if te is None or one(te, "type") != "TYPE_SLICE_BEGIN":
                continue
            name = one(te, "name") or names.get(one(te, "name_iid"))
            ann = {one(a, "name"): a for a in te.get("debug_annotations", [])}
            attrs = None
            if "color" in ann:
                attrs = (one(ann["color"], "string_value"), int(one(ann["group"], "uint_value")))
            got.setdefault(name, []).append(attrs)
        check_rows(got, "Perfetto")
    finally:
        rp.cleanup()
    print("ok")


main()
