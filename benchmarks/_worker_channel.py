"""The JSON-lines channel of the benchmark worker processes (_enr_worker.py,
_llm_worker.py): requests come on stdin, one reply per line on the
process's original stdout."""

import json
import os
import sys


def open_channel():
    """Keeps the original stdout for the replies and sends everything else
    written to stdout, by Python or by native code, to stderr (which the
    parent discards), so nothing printed can break the protocol. Returns
    reply(**msg), which writes one JSON line and flushes it."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(**msg):
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    return reply
