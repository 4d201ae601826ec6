#!/usr/bin/env python3
"""usage: expect_exit.py STATUS CMD...: runs CMD (stderr to stdout) and fails unless it exits with STATUS."""
import subprocess
import sys

want = int(sys.argv[1])
rc = subprocess.call(sys.argv[2:], stderr=subprocess.STDOUT)
print("exit %d" % rc)
sys.exit(0 if rc == want else 1)
