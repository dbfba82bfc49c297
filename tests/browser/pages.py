"""Helpers for the browser tests: open a notebook's explorer in Voila, drive it, check the page.

Selectors are the CSS hooks that :class:`scaleout.widgets.common.Explorer` sets.

A move is checked against numbers known without the library (:class:`Known`): a published
figure, or a hand calculation written out in the test, formatted the way the explorer
formats it (:mod:`scaleout.formatting`). :func:`assert_known` finds them in the readout and
in the chart, whose SVG it fetches from the page and reads here (:class:`Chart`).
"""

from __future__ import annotations

import itertools
import math
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .voila_app import VoilaServer, WatchedPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# CSS hooks set by scaleout.widgets.common.Explorer (the Image widget is the <img> itself)
FIGURE = "img.so-figure, .so-figure img"
READOUT = ".so-readout-box"
STATUS = ".so-status"

RENDER_TIMEOUT_MS = 300_000  # Voila runs the whole notebook before the widget shows (a
# guard against a hang: notebook 15 compiles with JAX and runs MPI, which on a loaded 2-core
# machine, beside another test worker, has taken over 120 s)
EVENT_TIMEOUT_MS = 20_000  # one control change: kernel round trip and redraw
# What Voila prints for a failing cell, with and without --show_tracebacks
ERROR_TEXTS = ("Traceback", "There was an error when executing cell")
ERROR_OUTPUTS = (
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'
)



def figure_src(page: Page) -> str:
    """The figure's current ``src`` (a new blob URL on every redraw)."""
    return page.locator(FIGURE).first.get_attribute("src") or ""


def text_of(page: Page, selector: str) -> str:
    """Visible text of the first element matching ``selector``, stripped."""
    return page.locator(selector).first.inner_text().strip()


def wait_for_js(page: Page, what: str, expression: str, arg: object) -> None:
    """Wait until ``expression`` (a JS function of ``arg``) is truthy; fail saying ``what``."""
    try:
        page.wait_for_function(expression, arg=arg, timeout=EVENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        pytest.fail(f"timed out after {EVENT_TIMEOUT_MS} ms waiting for {what}; status: "
                    f"{text_of(page, STATUS)!r}", pytrace=False)


def wait_for_redraw(page: Page, old_src: str, what: str = "the figure to be redrawn") -> None:
    """Wait until the figure's ``src`` differs from ``old_src`` (a new image arrived)."""
    wait_for_js(page, what,
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e !== null && e.getAttribute('src') !== old; }", [FIGURE, old_src])


def assert_control_redraws(app: WatchedPage, move: Callable[[], None], figure: str) -> str:
    """Snapshot figure and readout, ``move`` a control, and wait until both have changed.

    Checks the page is clean before and after and the status line stays empty; returns the
    readout as it was before the move.
    """
    page = app.page
    assert_page_clean(app)
    src, readout = figure_src(page), text_of(page, READOUT)
    assert src, f"the {figure} has no src"
    move()
    wait_for_redraw(page, src, f"the {figure} to be redrawn")
    wait_for_text(page, READOUT, "the readout to change", f"t => t !== {readout!r}")
    assert text_of(page, STATUS) == ""
    assert_page_clean(app)
    return readout


def wait_for_text(page: Page, selector: str, what: str, predicate_js: str) -> None:
    """Wait until ``predicate_js`` (a JS function of the element's text) holds."""
    wait_for_js(
        page, what,
        "([sel, pred]) => { const e = document.querySelector(sel);"
        " return e !== null && eval(pred)(e.innerText.trim()); }",
        [selector, predicate_js],
    )


def set_int_text(page: Page, selector: str, value: int) -> None:
    """Type a number into an IntText-like control and commit it (Enter)."""
    box = page.locator(selector).first
    box.fill(str(value))
    box.press("Enter")


def assert_page_clean(app: WatchedPage) -> None:
    """No Python traceback or error output on the page, no console error, no page error."""
    body = app.page.locator("body").inner_text()
    for text in ERROR_TEXTS:
        at = body.find(text)
        assert at < 0, f"the page shows a Python error:\n{body[max(at - 300, 0):at + 2000]}"
    errors = app.page.locator(ERROR_OUTPUTS).all_inner_texts()
    assert not errors, "stderr/error output on the page:\n" + "\n---\n".join(errors)
    assert not app.problems(), "the browser complained:\n" + "\n".join(app.problems())


def open_explorer(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage,
                  notebook: Path, ready_js: str = "t => t !== ''") -> WatchedPage:
    """Serve ``notebook`` with Voila, open it, and wait until its explorer has drawn once.

    ``ready_js`` is a JS predicate on the readout's text that says the explorer is ready.
    Fails (never skips) with the page text, the browser's complaints and Voila's log.
    """
    server = serve_voila(notebook)
    page = watched_page.page
    try:
        page.goto(server.url, timeout=RENDER_TIMEOUT_MS)
        page.locator(FIGURE).first.wait_for(state="visible", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_function(
            "([sel, pred]) => { const e = document.querySelector(sel);"
            " return e !== null && eval(pred)(e.innerText.trim()); }",
            arg=[READOUT, ready_js], timeout=EVENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        body = page.locator("body").inner_text() if page.locator("body").count() else ""
        pytest.fail(f"the explorer of {notebook.name} did not render.\n--- page text ---\n"
                    f"{body[-3000:]}\n--- browser ---\n" + "\n".join(watched_page.problems())
                    + f"\n--- voila log ---\n{server.log()}", pytrace=False)
    return watched_page


def explorer_app(notebook: str, ready_js: str = "t => t !== ''"):
    """A fixture ``app``: notebook ``notebook`` (a file of notebooks/) open in Chromium, its
    explorer drawn once (:func:`open_explorer` with ``ready_js``).

    A test module binds it to the name its tests ask for: ``app = explorer_app(...)``.
    """
    @pytest.fixture
    def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
        """The notebook open in Chromium, its explorer drawn once."""
        return open_explorer(serve_voila, watched_page, NOTEBOOKS / notebook, ready_js)

    return app


def assert_bad_value_recovers(app: WatchedPage, set_bad: Callable[[], None],
                              set_good: Callable[[], None], message: str, *,
                              readout: str = READOUT, status: str = STATUS) -> None:
    """``set_bad`` shows a ⚠ status containing ``message`` (page clean); ``set_good`` clears it.

    The readout after ``set_good`` must equal the readout before ``set_bad``: the same valid
    input gives the same result, and a bad one leaves no trace. ``readout`` and ``status`` are
    the selectors of the explorer's boxes (the page's first explorer by default).
    """
    page = app.page
    before = text_of(page, readout)
    set_bad()
    wait_for_text(page, status, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert message in text_of(page, status), text_of(page, status)
    assert_page_clean(app)
    set_good()
    wait_for_text(page, status, "the status to clear", "t => t === ''")
    assert text_of(page, readout) == before, "the same valid input should give the same readout"
    assert_page_clean(app)


# =========================================================================== known values
EXPLORER = ".so-explorer"
_SVG_NS = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Known:
    """What the page must show after a move, known without the library.

    ``source`` says where the numbers come from (a paper's table, a datasheet, a formula
    worked out with the catalog's figures); it is printed when a check fails.

    * ``readout``: texts each found in the readout's text;
    * ``rows``: rows of a readout table, each given by its first cells (``("communication",
      "451 µs")`` matches a row whose first two cells are exactly these; ``None`` matches any
      cell);
    * ``figure``: texts each equal to one whole ``<text>`` or ``<title>`` of the chart (a bar's
      or a point's tooltip reads ``"name: value"``, a bar's total its value);
    * ``check``: a function of the :class:`Chart` for what texts alone cannot show (how many
      bars, where a line ends); it asserts.

    ``explorer`` is which explorer of the page: its index among the page's explorers, or a
    CSS selector of its container.
    """

    source: str
    readout: tuple[str, ...] = ()
    rows: tuple[tuple[str | None, ...], ...] = ()
    figure: tuple[str, ...] = ()
    check: Callable[[Chart], None] | None = None
    explorer: int | str = 0


def _box_js(which: int | str) -> str:
    """A JS expression for the explorer's container element."""
    if isinstance(which, int):
        return f"document.querySelectorAll({EXPLORER!r})[{which}]"
    return f"document.querySelector({which!r})"


def readout_text(page: Page, which: int | str = 0) -> str:
    """The visible text of an explorer's readout."""
    return page.evaluate(
        f"() => {{ const b = {_box_js(which)}; const r = b && b.querySelector('.so-readout-box');"
        " return r ? r.innerText.trim() : ''; }")


def readout_rows(page: Page, which: int | str = 0) -> list[list[str]]:
    """Every table row of an explorer's readout, as the texts of its cells."""
    return page.evaluate(
        f"() => {{ const b = {_box_js(which)}; if (!b) return [];"
        " return [...b.querySelectorAll('.so-readout-box tr')].map(tr =>"
        " [...tr.querySelectorAll('th, td')].map(c => c.innerText.trim())); }")


def figure_svg(page: Page, which: int | str = 0) -> str:
    """The SVG text of an explorer's chart (its ``<img>`` holds it as a blob or data URL)."""
    return page.evaluate(
        f"async () => {{ const b = {_box_js(which)};"
        " const img = b && b.querySelector('img.so-figure, .so-figure img');"
        " if (!img || !img.getAttribute('src')) return '';"
        " return await (await fetch(img.getAttribute('src'))).text(); }")


def assert_known(app: WatchedPage, known: Known) -> Chart:
    """Wait until the readout and the chart show ``known`` (readout texts, rows, chart texts,
    the chart check); then the page must be clean. Returns the chart, for further checks.

    Fails after :data:`EVENT_TIMEOUT_MS` naming what is missing, where the expected value
    comes from, the readout and the chart's texts.
    """
    page = app.page
    deadline = time.monotonic() + EVENT_TIMEOUT_MS / 1000
    while True:
        chart, problems = _known_problems(page, known)
        if not problems:
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"after {EVENT_TIMEOUT_MS} ms the page does not show what {known.source} gives:\n"
                + "\n".join(f"  - {p}" for p in problems)
                + f"\nstatus: {_status(page, known.explorer)!r}\nreadout rows:\n"
                + "\n".join(" | ".join(r) for r in readout_rows(page, known.explorer))
                + f"\nreadout text:\n{readout_text(page, known.explorer)}"
                + f"\nchart texts: {chart.texts if chart else None}", pytrace=False)
        page.wait_for_timeout(150)
    assert_page_clean(app)
    return chart


def _known_problems(page: Page, known: Known) -> tuple[Chart | None, list[str]]:
    """What of ``known`` the page does not show (yet)."""
    problems: list[str] = []
    text = readout_text(page, known.explorer)
    problems += [f"readout text {w!r}" for w in known.readout if w not in text]
    rows = readout_rows(page, known.explorer)
    problems += [f"readout row {list(w)}" for w in known.rows
                 if not any(row_matches(r, w) for r in rows)]
    svg = figure_svg(page, known.explorer)
    if not svg:
        return None, [*problems, "a chart"]
    chart = Chart(svg)
    problems += [f"chart text {t!r}" for t in known.figure if t not in chart.texts]
    if known.check is not None:
        try:
            known.check(chart)
        except AssertionError as exc:
            problems.append(f"chart: {exc}")
    return chart, problems


def row_matches(row: list[str], want: tuple[str | None, ...]) -> bool:
    """Whether a table row starts with the cells ``want`` (``None`` matches any cell)."""
    return len(row) >= len(want) and all(w is None or w == c for w, c in zip(want, row,
                                                                             strict=False))


def _status(page: Page, which: int | str) -> str:
    return page.evaluate(
        f"() => {{ const b = {_box_js(which)}; const s = b && b.querySelector('.so-status');"
        " return s ? s.innerText.trim() : ''; }")


# =========================================================================== reading a chart
_SUFFIX = {"k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def tick_value(text: str) -> float | None:
    """A tick label of :func:`scaleout.formatting.axis_tick` as a number (``"10k"`` → 10,000);
    None for labels with a unit (``"1 ms"``, ``"32 MiB"``)."""
    m = re.fullmatch(r"(-?[\d,]*\.?\d+)([kMBT]?)", text.strip())
    if not m:
        return None
    return float(m.group(1).replace(",", "")) * _SUFFIX.get(m.group(2), 1.0)


@dataclass(frozen=True)
class Axis:
    """Pixel ↔ value along one axis of a chart, from two of its tick labels."""

    pixel0: float
    value0: float
    pixel1: float
    value1: float
    log: bool

    def value(self, pixel: float) -> float:
        """The value drawn at ``pixel``."""
        f = (pixel - self.pixel0) / (self.pixel1 - self.pixel0)
        if self.log:
            return math.exp(math.log(self.value0)
                            + f * (math.log(self.value1) - math.log(self.value0)))
        return self.value0 + f * (self.value1 - self.value0)


def _axis(ticks: list[tuple[float, float]]) -> Axis:
    ticks = sorted(ticks, key=lambda t: t[1])
    values = [v for _p, v in ticks]
    log = (all(v > 0 for v in values) and len(values) > 2
           and all(b / a > 1.5 for a, b in itertools.pairwise(values))
           and not math.isclose(values[2] - values[1], values[1] - values[0]))
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]
    return Axis(p0, v0, p1, v1, log)


class Chart:
    """An explorer's SVG chart (:mod:`scaleout.svgchart`), read back: its texts, its stacked
    sub-charts, its lines in data coordinates and its bars."""

    def __init__(self, svg: str) -> None:
        assert svg.lstrip().startswith("<svg"), f"not an SVG chart: {svg[:200]!r}"
        if "xmlns=" not in svg.split(">", 1)[0]:  # an inline <svg> as the page serialises it
            svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
        self.svg = svg
        self.root = ET.fromstring(svg)
        nested = [e for e in self.root if e.tag == f"{_SVG_NS}svg"]
        #: the charts one above the other (:func:`scaleout.svgchart.vstack`), or the one chart
        self.parts: list[ET.Element] = nested or [self.root]

    @property
    def texts(self) -> list[str]:
        """Every ``<text>`` and ``<title>`` of the chart, in the order drawn."""
        return [_text(e) for e in self.root.iter()
                if e.tag in (f"{_SVG_NS}text", f"{_SVG_NS}title")]

    def part_texts(self, part: int) -> list[str]:
        """The texts of one of the stacked charts."""
        return [_text(e) for e in self.parts[part].iter()
                if e.tag in (f"{_SVG_NS}text", f"{_SVG_NS}title")]

    def axes(self, part: int = 0) -> tuple[Axis, Axis]:
        """The x and y axes of a line chart, from its numeric tick labels."""
        xs: dict[float, list[tuple[float, float]]] = {}
        ys: dict[float, list[tuple[float, float]]] = {}
        for e in self.parts[part].iter(f"{_SVG_NS}text"):
            v = tick_value(_text(e))
            if v is None or "font-size" in e.attrib or "transform" in e.attrib:
                continue
            anchor = e.get("text-anchor")
            if anchor == "middle":  # x ticks: drawn at (fx(t), bottom + 16)
                xs.setdefault(float(e.get("y")), []).append((float(e.get("x")), v))
            elif anchor == "end":  # y ticks: drawn at (left - 6, fy(t) + 4)
                ys.setdefault(float(e.get("x")), []).append((float(e.get("y")) - 4, v))
        assert xs and ys, "the chart has no numeric ticks on both axes"
        return (_axis(max(xs.values(), key=len)), _axis(max(ys.values(), key=len)))

    def line(self, label: str, part: int = 0) -> list[tuple[float, float]]:
        """The points of the line titled ``label``, in the data's units."""
        ax, ay = self.axes(part)
        for e in self.parts[part].iter(f"{_SVG_NS}polyline"):
            title = e.find(f"{_SVG_NS}title")
            if title is not None and _text(title) == label:
                pts = [tuple(map(float, p.split(","))) for p in e.get("points").split()]
                return [(ax.value(x), ay.value(y)) for x, y in pts]
        raise AssertionError(f"no line titled {label!r}; texts: {self.part_texts(part)}")

    def bar_count(self, part: int = 0) -> int:
        """Bars of a Gantt chart (:func:`scaleout.svgchart.gantt`: one closed sub-path each)."""
        return sum(e.get("d", "").count("z") for e in self.parts[part].iter(f"{_SVG_NS}path"))

    def bar_total(self, label: str, part: int = 0) -> str:
        """The total printed after the bar of row ``label`` (a bar chart of
        :func:`scaleout.svgchart.stacked_hbars`)."""
        texts = list(self.parts[part].iter(f"{_SVG_NS}text"))
        for i, e in enumerate(texts):
            if _text(e) == label and e.get("text-anchor") == "end" and i + 1 < len(texts):
                return _text(texts[i + 1])
        raise AssertionError(f"no bar labelled {label!r}; texts: {self.part_texts(part)}")

    def bar_segments(self, label: str, part: int = 0) -> list[str]:
        """The tooltips (``"segment: value"``) of the bar of row ``label``, left to right."""
        out: list[str] = []
        inside = False
        for e in self.parts[part].iter():
            if e.tag == f"{_SVG_NS}text" and e.get("text-anchor") == "end":
                if inside:
                    break
                inside = _text(e) == label
            elif inside and e.tag == f"{_SVG_NS}rect":
                title = e.find(f"{_SVG_NS}title")
                if title is not None:
                    out.append(_text(title))
        if not inside and not out:
            raise AssertionError(f"no bar labelled {label!r}; texts: {self.part_texts(part)}")
        return out

    def bold_texts(self) -> list[str]:
        """Texts drawn in bold (the highlighted row of a bar chart, the title)."""
        return [_text(e) for e in self.root.iter(f"{_SVG_NS}text")
                if e.get("font-weight") == "bold"]


def _text(e: ET.Element) -> str:
    return "".join(e.itertext()).strip()


def value_at(points: list[tuple[float, float]], x: float) -> float:
    """The y of the point nearest to ``x`` (relative distance, so it works on log axes)."""
    return min(points, key=lambda p: abs(math.log(p[0] / x)) if p[0] > 0 and x > 0
               else abs(p[0] - x))[1]
