"""A Tk entry whose caret blinks (250 ms on, 250 ms off), for look auto: with
nothing else happening in the window, the blinking is not a change.

Usage: python3 tk_blink.py TITLE GEOMETRY
"""

import sys
import tkinter as tk

title, geometry = sys.argv[1], sys.argv[2]
root = tk.Tk(className="StephostBlink")
root.title(title)
root.geometry(geometry)
entry = tk.Entry(root, width=20, insertontime=250, insertofftime=250, insertwidth=2, font=("Courier", 14))
entry.insert(0, "caret here")
entry.pack(padx=10, pady=10)
entry.focus_set()
root.mainloop()
