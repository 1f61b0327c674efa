#!/usr/bin/python3
"""install_db_url.py - the PostgreSQL URL docs/install.md tells the user to put
in the Secret tessera-db (its `kubectl create secret ... --from-literal=url=`
line), unquoted as the shell would, with $VARIABLES left as written. Prints one
line per such command; exit 1 when there is none.
Usage: install_db_url.py INSTALL.md
"""
import re
import shlex
import sys


def urls(text):
    out = []
    for arg in re.findall(r"--from-literal=url=(\S+)", text):
        words = shlex.split(arg, posix=True)
        if words and words[0].startswith(("postgres://", "postgresql://")):
            out.append(words[0])
    return out


if __name__ == "__main__":
    found = urls(open(sys.argv[1]).read())
    print("\n".join(found))
    sys.exit(0 if found else 1)
