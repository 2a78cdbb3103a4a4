"""Runs inside xterm: records every byte the terminal receives to a file.

Usage: python3 recorder.py OUT_FILE
The terminal is put in raw mode so control keys (ctrl+c, ctrl+d) arrive as
bytes instead of signals. Ends after 10 minutes as a safety net.
"""

import os
import select
import sys
import termios
import time
import tty

out = sys.argv[1]
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    with open(out, "ab", buffering=0) as f:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                data = os.read(fd, 1024)
                if not data:
                    break
                f.write(data)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, old)
