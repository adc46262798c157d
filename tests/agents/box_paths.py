"""Server paths in what an agent's box can read (issue 11 item 15): the
bind mounts' root fields in a box's mountinfo, the only place one may show
(docs/sandbox.md, "What an agent box shows of the server")."""
import os


def fs_root_of(path):
    """The root field a bind of path shows in a mountinfo: path relative to
    the root of the file system holding it (from this process's own
    mountinfo: the longest mount point above path, its root field)."""
    best = ("", "/")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            x = line.split()
            root, mnt = x[3], x[4]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, root)
    rest = path[len(best[0].rstrip("/")):]
    return (best[1].rstrip("/") + rest) or "/"


def needles(*paths):
    """The strings that name the server's paths: each real path and its
    form relative to its file system (what a bind would show)."""
    out = {os.path.realpath(p) for p in paths}
    return out | ({fs_root_of(p) for p in out} - {"/"})


def binds_showing(mountinfo, needle_set):
    """(mountinfo with the root field of the lines naming a needle blanked,
    {mount point: root field} of those lines)."""
    lines, showing = [], {}
    for line in mountinfo.splitlines():
        x = line.split(" ")
        if len(x) > 4 and any(n in x[3] for n in needle_set):
            showing[x[4]] = x[3]
            x[3] = "-"
        lines.append(" ".join(x))
    return "\n".join(lines), showing
