"""What step code sees of the host; run: forge sandbox exec examples/sandbox-probe/probe.py."""

import os
import resource
import sys

print("/          ", *sorted(os.listdir("/")))
print("sys.path   ", *sys.path)
for line in open("/proc/self/mountinfo"):
    root, mountpoint = line.split()[3:5]
    if not mountpoint.startswith("/dev"):
        print("mount      ", mountpoint, "<-", root)
print("pid 1      ", open("/proc/1/cmdline").read().replace("\0", " ")[:90], "…")
for name in ("anthropic", "boto3", "sqlalchemy", "temporalio", "psycopg", "pydantic", "workers"):
    try:
        __import__(name)
        print("import     ", name, "IMPORTED")
    except ImportError:
        print("import     ", name, "ImportError")
for name in ("CPU", "AS", "FSIZE", "NPROC", "NOFILE"):
    soft, hard = resource.getrlimit(getattr(resource, "RLIMIT_" + name))
    try:
        resource.setrlimit(getattr(resource, "RLIMIT_" + name), (soft, hard + 1))
        raised = "raised!"
    except ValueError:
        raised = "cannot raise"
    print("rlimit     ", name, soft, hard, raised)
