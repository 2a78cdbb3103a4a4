"""Prints the PRIMARY selection, then takes it over so its owner lets go.

Usage: python3 read_primary.py   (DISPLAY set; the system Python with python3-tk)

The desktop tests read xcalc's display this way: clicking xcalc's LCD makes it
own PRIMARY with the number shown, which is xcalc's own state, independent of
what the test drove it with. Taking the selection over resets xcalc's "selected"
flag, so the next click on the LCD owns it again.
"""

import sys
import tkinter

root = tkinter.Tk()
root.withdraw()
try:
    value = root.selection_get(selection="PRIMARY")
except tkinter.TclError:
    value = ""
print(value.strip())
sys.stdout.flush()
root.selection_own(selection="PRIMARY")
root.update()
