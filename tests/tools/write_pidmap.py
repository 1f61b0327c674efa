#!/usr/bin/env python3
"""write_pidmap.py PID OUT - the pid map the node agent writes (src/agent/pidmap.c,
docs/shim.md), for every process in the pid namespace of host pid PID: lines
"<pid-namespace inode> <pid in it> <host pid>", written to OUT atomically. Used by
tests/cli/shim_sm.sh and scripts/gpu-check, which start tenants with unshare --pid."""
import os
import sys

ns = os.stat(f"/proc/{sys.argv[1]}/ns/pid").st_ino
lines = ["# pidns container-pid host-pid\n"]
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.stat(f"/proc/{p}/ns/pid").st_ino != ns:
            continue
        with open(f"/proc/{p}/status") as f:
            nspid = [l for l in f if l.startswith("NSpid:")][0].split()[-1]
        lines.append(f"{ns} {nspid} {p}\n")
    except (OSError, IndexError):
        pass  # gone meanwhile
with open(sys.argv[2] + ".tmp", "w") as f:
    f.writelines(lines)
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
