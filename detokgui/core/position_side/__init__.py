"""The position side of layer 0 (B1-B7, docs/math/position-side.md): positional bias, the
positional pattern and head classes, key-position slopes (`positional`), the position
embedding's dimensions (`neurons`), and their tables and texts (`class_texts`: the head
classes' table; `titles`: the window's position plots' titles and notes).

May import: `core.base`, `core.model`.
"""
