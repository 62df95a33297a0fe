"""Light and dark palettes that follow the system (Fusion style).

``theme`` is the setting: ``system`` follows ``QStyleHints.colorScheme`` and
changes with it; ``light`` and ``dark`` force one. The style sheet only uses
``palette(...)`` colours, so it fits both.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

from app.core.resources import resource_path

STYLE_SHEET = """
QFrame#dropZone {
    border: 2px dashed palette(mid);
    border-radius: 8px;
    background: palette(base);
}
QFrame#dropZone[dragActive="true"] {
    border-color: palette(highlight);
    background: palette(alternate-base);
}
QLabel#dropHint { color: palette(placeholder-text); }
QLabel#panelTitle { font-weight: 600; font-size: 11pt; }
QLabel#notice { color: palette(highlighted-text); background: palette(highlight);
                border-radius: 4px; padding: 4px 8px; }
QLabel#errorText { color: #c62828; }
QTextBrowser#report { padding: 6px; }
"""


def app_icon() -> QIcon:
    return QIcon(str(resource_path("icons", "fathom.svg")))


def dark_palette() -> QPalette:
    palette = QPalette()
    window, base, text = QColor(37, 38, 41), QColor(27, 28, 30), QColor(228, 228, 228)
    disabled = QColor(128, 128, 128)
    palette.setColor(QPalette.ColorRole.Window, window)
    palette.setColor(QPalette.ColorRole.WindowText, text)
    palette.setColor(QPalette.ColorRole.Base, base)
    palette.setColor(QPalette.ColorRole.AlternateBase, QColor(45, 46, 50))
    palette.setColor(QPalette.ColorRole.ToolTipBase, QColor(52, 53, 57))
    palette.setColor(QPalette.ColorRole.ToolTipText, text)
    palette.setColor(QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150))
    palette.setColor(QPalette.ColorRole.Text, text)
    palette.setColor(QPalette.ColorRole.Button, QColor(48, 49, 53))
    palette.setColor(QPalette.ColorRole.ButtonText, text)
    palette.setColor(QPalette.ColorRole.BrightText, QColor(255, 90, 90))
    palette.setColor(QPalette.ColorRole.Link, QColor(110, 170, 255))
    palette.setColor(QPalette.ColorRole.LinkVisited, QColor(170, 140, 255))
    palette.setColor(QPalette.ColorRole.Highlight, QColor(52, 120, 220))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor(255, 255, 255))
    palette.setColor(QPalette.ColorRole.Mid, QColor(80, 82, 88))
    palette.setColor(QPalette.ColorRole.Dark, QColor(20, 20, 22))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
        QPalette.ColorRole.WindowText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


def is_dark(theme: str) -> bool:
    if theme == "dark":
        return True
    if theme == "light":
        return False
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, theme: str = "system") -> None:
    """Fusion style, a palette for the effective scheme, the palette-aware style sheet."""
    fusion = QStyleFactory.create("Fusion")
    if fusion is not None:
        app.setStyle(fusion)
    app.setPalette(dark_palette() if is_dark(theme) else app.style().standardPalette())
    app.setStyleSheet(STYLE_SHEET)


def follow_system(app: QApplication, theme_getter: object) -> None:
    """Re-apply the palette when the system switches between light and dark."""

    def changed(_scheme: Qt.ColorScheme) -> None:
        theme = theme_getter() if callable(theme_getter) else "system"
        if theme == "system":
            apply_theme(app, "system")

    QGuiApplication.styleHints().colorSchemeChanged.connect(changed)


def low_confidence_brush() -> QColor:
    """Background of a low-confidence table cell, readable in both palettes."""
    return QColor(255, 193, 7, 90)


def unsupported_colour() -> QColor:
    return QColor(211, 47, 47)
