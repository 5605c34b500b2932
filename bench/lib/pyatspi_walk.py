"""The baseline walk for bench/a11y-floor.mjs: pyatspi (libatspi) reading the same facts our
inspect_tree reads (role name, name, state set, interfaces, screen extents, action names of
Action nodes, children), breadth first, from the frame of process PID whose extents match.

    /usr/bin/python3 bench/lib/pyatspi_walk.py PID

Prints {"ready": true} once it found the frame, then walks once per line read on stdin
(so a benchmark can interleave it with other walks) and prints {"nodes": N, "ms": T}.
"""
import json
import sys
import time

import pyatspi


def frame_of(pid):
    desktop = pyatspi.Registry.getDesktop(0)
    for app in desktop:
        if app is None:
            continue
        try:
            if app.get_process_id() != pid:
                continue
        except Exception:
            continue
        for frame in app:
            if frame is not None:
                return frame
    return None


def facts(node):
    role = node.getRoleName()
    name = node.name
    states = node.getState().getStates()
    ifaces = node.get_interfaces()
    rect = None
    if "Component" in ifaces:
        e = node.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        rect = (e.x, e.y, e.width, e.height)
    actions = []
    if "Action" in ifaces:
        a = node.queryAction()
        actions = [a.getName(i) for i in range(a.nActions)]
    return (role, name, len(states), rect, actions)


def walk(root):
    level = [root]
    count = 0
    while level:
        nxt = []
        for n in level:
            facts(n)
            count += 1
            for i in range(n.childCount):
                c = n.getChildAtIndex(i)
                if c is not None:
                    nxt.append(c)
        level = nxt
    return count


def main():
    pid = int(sys.argv[1])
    root = frame_of(pid)
    if root is None:
        print(json.dumps({"error": "no frame"}), flush=True)
        return
    print(json.dumps({"ready": True}), flush=True)
    for _ in sys.stdin:
        # libatspi keeps what it read; every round reads the live tree, as inspect_tree does.
        root.clear_cache()
        t0 = time.perf_counter()
        n = walk(root)
        print(json.dumps({"nodes": n, "ms": (time.perf_counter() - t0) * 1000}), flush=True)


main()
