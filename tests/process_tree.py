"""The processes a test started, found through /proc (Linux): to stop a hung job whole, and to check that a stopped
launcher left none of its processes behind."""
import collections
import os
import time


def descendants(root):
    """`root` and every process below it, now."""
    children = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    children[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def running(pids):
    """Those of `pids` that still run (a zombie has ended)."""
    alive = []
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except (OSError, IndexError):
            pass
    return alive


def wait_until_gone(pids, limit_s=10.0):
    """The pids still running after up to `limit_s` (empty once all have ended)."""
    deadline = time.monotonic() + limit_s
    alive = running(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = running(alive)
    return alive
