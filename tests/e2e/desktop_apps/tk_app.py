"""A small Tk window for the desktop tests: an entry, a button and a key log.

Usage: python3 tk_app.py STATE_DIR [TITLE]

Writes STATE_DIR/layout.json once mapped (screen coordinates of the entry and
the button), appends every key press to STATE_DIR/keys.log as
`keysym state` lines, and writes the entry text and button count to
STATE_DIR/state.json after every change. The caret does not blink, so an idle
window is pixel-stable.
"""

import json
import os
import sys
import tkinter as tk

state_dir = sys.argv[1]
title = sys.argv[2] if len(sys.argv) > 2 else "Stephost Tk Test"

root = tk.Tk(className="StephostTk")
root.title(title)
root.geometry("420x220+300+200")

entry = tk.Entry(root, width=30, insertofftime=0, font=("Courier", 14))
entry.pack(padx=10, pady=10)
count = tk.IntVar(value=0)
label = tk.Label(root, text="clicked 0 times", font=("Courier", 14))


def write_state(*_):
    tmp = os.path.join(state_dir, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"text": entry.get(), "clicks": count.get()}, f)
    os.replace(tmp, os.path.join(state_dir, "state.json"))


def pressed():
    count.set(count.get() + 1)
    label.config(text=f"clicked {count.get()} times")
    write_state()


button = tk.Button(root, text="Press me", command=pressed, font=("Courier", 14))
button.pack(pady=10)
label.pack(pady=10)


def on_key(event):
    with open(os.path.join(state_dir, "keys.log"), "a") as f:
        f.write(f"{event.keysym} {event.state}\n")
    root.after(1, write_state)


root.bind_all("<KeyPress>", on_key, add="+")
entry.focus_set()


def layout():
    root.update_idletasks()

    def center(w):
        return [w.winfo_rootx() + w.winfo_width() // 2, w.winfo_rooty() + w.winfo_height() // 2]

    info = {
        "entry": center(entry),
        "button": center(button),
        "window": [root.winfo_rootx(), root.winfo_rooty(), root.winfo_width(), root.winfo_height()],
    }
    tmp = os.path.join(state_dir, "layout.json.tmp")
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.replace(tmp, os.path.join(state_dir, "layout.json"))
    write_state()


root.after(300, layout)
root.mainloop()
