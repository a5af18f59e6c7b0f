# Drives pymemcache's base Client with its defaults (default_noreply=True:
# set, add, replace, append, prepend, delete and touch send "noreply"),
# the way an application that also writes to its cache would use it.
#
# Usage: python3 pymemcache_defaults.py HOST PORT
# Prints one line per call: the call, then its result (a value as
# LENGTH:SHA256) or the exception's class and message.
import hashlib
import sys

from pymemcache.client.base import Client

host, port = sys.argv[1], int(sys.argv[2])
c = Client((host, port))


def digest(v):
    return "%d:%s" % (len(v), hashlib.sha256(v).hexdigest())


def show(name, fn):
    try:
        r = fn()
    except Exception as e:  # the test compares the class and message
        msg = e.args[0] if e.args else ""
        if isinstance(msg, bytes):
            msg = msg.decode("ascii", "replace")
        print(name, "raised", type(e).__name__, msg)
        return
    if isinstance(r, bytes):
        r = digest(r)
    elif isinstance(r, dict):
        r = " ".join("%s=%s" % (k, digest(v)) for k, v in sorted(r.items()))
    print(name, repr(r) if not isinstance(r, str) else r)


show("set", lambda: c.set("k", "v"))
show("get", lambda: c.get("customers:42"))
show("delete", lambda: c.delete("k"))
show("get_many", lambda: c.get_many(["customers:7", "customers:nope", "customers:9000"]))
show("add", lambda: c.add("k", "v"))
show("replace", lambda: c.replace("k", "v"))
show("append", lambda: c.append("k", "v"))
show("prepend", lambda: c.prepend("k", "v"))
show("touch", lambda: c.touch("k", 10))
show("set_many", lambda: c.set_many({"a": "1", "b": "2"}))
show("delete_many", lambda: c.delete_many(["a", "b"]))
show("gets", lambda: c.gets("customers:1")[0])
show("get", lambda: c.get("customers:42"))
show("set noreply=False", lambda: c.set("k", "v", noreply=False))
show("get", lambda: c.get("customers:1"))
show("delete noreply=False", lambda: c.delete("k", noreply=False))
show("get", lambda: c.get("customers:nope"))
show("version", lambda: c.version().decode())
