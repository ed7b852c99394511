"""What a pyqtgraph axis draws, read through its public API (tests read no library
object's private attributes)."""

from PySide6.QtGui import QImage, QPainter


def label_specs(axis) -> list[tuple]:
    """(rect, flags, text) of each tick label `axis` would draw now (pyqtgraph's
    generateDrawSpecs, on a scratch painter)."""
    img = QImage(10, 10, QImage.Format_ARGB32)
    painter = QPainter(img)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return list(specs[2]) if specs else []


def axis_labels(axis) -> list[tuple[float, str]]:
    """(value, text) of each tick label `axis` would draw now, each label's value read
    back from where its centre is drawn."""
    vb = axis.linkedView()
    out = []
    for rect, _flags, text in label_specs(axis):
        p = vb.mapSceneToView(axis.mapToScene(rect.center()))
        out.append((p.y() if axis.orientation in ("left", "right") else p.x(), text))
    return out
