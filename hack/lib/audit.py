#!/usr/bin/env python3
"""Reads a kube-apiserver JSON audit log for one user's requests.

  audit.py writes LOG USER [FROM_LINE]   lists the user's writes (create/update/patch/delete) after
                                         FROM_LINE, leases and events excepted; exits 1 if any
  audit.py denied LOG USER               lists the user's requests answered 403; exits 1 if any
  audit.py lines LOG                     prints the number of lines (an offset for `writes`)
"""
import json
import sys

WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
# Lease renewals and Events are the operator's heartbeat and its report, not changes to the cluster.
NOT_COUNTED = {"leases", "events"}


def entries(path, user, start=0):
    with open(path, encoding="utf-8") as log:
        for number, line in enumerate(log):
            if number < start:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("stage") == "ResponseComplete" and entry.get("user", {}).get("username") == user:
                yield entry


def describe(entry):
    ref = entry.get("objectRef", {})
    return "{} {} {}/{} -> {}".format(entry.get("verb"), ref.get("resource"), ref.get("namespace", ""),
                                      ref.get("name", ""), entry.get("responseStatus", {}).get("code"))


def main(argv):
    if len(argv) >= 3 and argv[1] == "lines":
        with open(argv[2], encoding="utf-8") as log:
            print(sum(1 for _ in log))
        return 0
    if len(argv) >= 4 and argv[1] == "writes":
        start = int(argv[4]) if len(argv) > 4 else 0
        found = [e for e in entries(argv[2], argv[3], start)
                 if e.get("verb") in WRITE_VERBS and e.get("objectRef", {}).get("resource") not in NOT_COUNTED]
        for entry in found:
            print(describe(entry))
        return 1 if found else 0
    if len(argv) >= 4 and argv[1] == "denied":
        found = [e for e in entries(argv[2], argv[3]) if e.get("responseStatus", {}).get("code") == 403]
        for entry in found:
            print(describe(entry))
        return 1 if found else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
