"""The PySide6 window. The only package that imports Qt."""
