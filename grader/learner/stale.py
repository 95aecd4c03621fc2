"""What a widget of an earlier kernel shows: a note to run its cell again, and no input.

A widget view in JupyterLab outlives its kernel: after Kernel -> Restart the old views stay on the page,
and a reopened notebook draws its saved widget state with no kernel behind it. Their input would go
nowhere. ipywidgets marks every such view itself: when a model's comm is not live (the kernel restarted,
or the model was restored from the notebook's saved state and no kernel holds it), its view carries the
CSS class ``jupyter-widgets-disconnected``, and a page reload to a running kernel takes it off again
(the views re-attach to their live models).

:func:`guard` builds on that class and nothing else: the box gets :data:`GUARDED`, and a note with a small
style sheet is added to it. While the box is disconnected, the style hides every child but the ones kept
(so nothing can be typed, ticked, focused or pressed) and shows the note; while it is connected the note
is hidden. It is plain CSS in an HTML widget's value, so it works in a reopened notebook too (the value is
part of the saved state) and needs no JavaScript.
"""

from __future__ import annotations

GUARDED = "agl-live-only"
KEEP = "agl-keep"
NOTE = "this widget belongs to an earlier kernel: run this cell again"

_STYLE = (
    "<style>"
    f".agl-stale{{display:none}}"
    f".{GUARDED}.jupyter-widgets-disconnected > :not(.{KEEP}){{display:none !important}}"
    f".{GUARDED}.jupyter-widgets-disconnected .agl-stale{{display:block}}"
    f".{GUARDED}:not(.jupyter-widgets-disconnected) > .agl-stale-note{{display:none}}"
    f".{GUARDED} > .{KEEP}.jupyter-widgets-disconnected::before{{display:none}}"  # one broken-link icon, the box's
    "</style>"
)


def note_html() -> str:
    """The note's HTML: hidden while the kernel holds the widget, shown once it does not."""
    return (
        f"{_STYLE}<div class='agl-stale' role='status' "
        f"style='color:#9a6700;font-weight:600;margin:2px 0'>⚠ {NOTE}.</div>"
    )


def guard(box, *keep) -> None:
    """Make ``box`` (an ipywidgets Box) show :data:`NOTE` instead of its inputs once its kernel is gone.

    ``keep`` are children that stay visible (a heading); the note is added as the box's last child
    (the others keep their places); with the rest hidden it shows under the ones kept.
    """
    import ipywidgets as W

    note = W.HTML(note_html())
    note.add_class(KEEP)
    note.add_class("agl-stale-note")
    for child in keep:
        child.add_class(KEEP)
    box.children = (*box.children, note)
    box.add_class(GUARDED)
