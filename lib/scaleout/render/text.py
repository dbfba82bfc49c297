"""Plain text as HTML for notebooks and reports: prose a browser wraps between words."""

from __future__ import annotations

import html


def paragraphs(text: str) -> str:
    """``text``'s non-empty lines as HTML paragraphs, escaped.

    For multi-line explanations (:func:`scaleout.plan.explain`, a cluster plan's
    ``explain``): printed, they sit in a monospace block that a narrow window breaks in the
    middle of words; as paragraphs they wrap between words in the page's own font.

    Parameters
    ----------
    text : str
        Lines separated by newlines; blank lines are dropped.

    Returns
    -------
    str
        ``<p>`` elements, one per line, with ``&``, ``<`` and ``>`` escaped.

    Examples
    --------
    >>> paragraphs("Best: TP8 PP4\\nbound by <compute>")
    '<p class="so-lines">Best: TP8 PP4</p><p class="so-lines">bound by &lt;compute&gt;</p>'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return "".join(f'<p class="so-lines">{html.escape(line.strip(), quote=False)}</p>'
                   for line in text.splitlines() if line.strip())
