"""A short Tk window with a long menu, for look auto: the menu (an
override-redirect window) hangs far below the window's bottom edge.

Usage: python3 tk_menu.py TITLE GEOMETRY
"""

import sys
import tkinter as tk

title, geometry = sys.argv[1], sys.argv[2]
root = tk.Tk(className="StephostMenu")
root.title(title)
root.geometry(geometry)
bar = tk.Menu(root)
items = tk.Menu(bar, tearoff=0)
for n in range(12):
    items.add_command(label=f"Menu item number {n + 1}")
bar.add_cascade(label="File", menu=items)
root.config(menu=bar)
tk.Label(root, text="menu test").pack()
root.mainloop()
