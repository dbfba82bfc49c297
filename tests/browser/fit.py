"""Does every text fit its box? Checks run in the page, for the browser tests.

:func:`overflow_problems` looks at every explorer on a page, as Chromium laid it out:

* labels, slider readouts, readout tables and the explorer itself must not be wider than
  their box (``scrollWidth > clientWidth`` means the text is cut or scrolls), nor reach past
  the explorer's right edge or the window's;
* a word (no space inside) must not be broken over lines of a table cell or a label
  (Korean one syllable per line, a header split mid-word);
* the text shown in a menu (``<select>``) or a number box must fit inside it, padding and
  arrow excluded (measured with a canvas in the control's own font);
* the chart: each SVG ``<text>`` must lie inside its ``<svg>`` (the viewBox), and no two
  texts may overlap (an axis title over tick labels, a legend entry over the next one).

The chart is an ``<img>`` whose SVG the page cannot inspect, so its source is fetched and
laid out once more, off screen, in the same page and fonts. A chart of several charts
stacked (:func:`scaleout.svgchart.vstack`) is checked chart by chart: each nested ``<svg>``
clips what overflows it.
"""

from __future__ import annotations

from playwright.sync_api import Page

# Returns a list of strings, one per problem ("what: detail"); empty when everything fits.
_CHECK_JS = r"""async (tolerance) => {
  const problems = [];
  const name = (el) => {
    const hook = [...(el.closest('[class*="so-ctl-"]')?.classList || [])]
      .find(c => c.startsWith('so-ctl-'));
    const text = (el.innerText || el.value || el.textContent || '').trim().slice(0, 60);
    return `${hook ? hook + ' ' : ''}<${el.tagName.toLowerCase()}> "${text}"`;
  };
  const canvas = document.createElement('canvas').getContext('2d');
  const textWidth = (text, el) => {
    const s = getComputedStyle(el);
    canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    return canvas.measureText(text).width;
  };
  const explorers = [...document.querySelectorAll('.so-explorer')];
  if (!explorers.length) problems.push('page: no .so-explorer found');
  const viewport = document.documentElement.clientWidth;
  for (const ex of explorers) {
    const edge = Math.min(ex.getBoundingClientRect().right, viewport);
    if (ex.scrollWidth > ex.clientWidth + tolerance)
      problems.push(`explorer content wider than the explorer: ${ex.scrollWidth} > ` +
                    `${ex.clientWidth}`);
    if (ex.getBoundingClientRect().right > viewport + tolerance)
      problems.push(`explorer wider than the window: ends at ` +
                    `${ex.getBoundingClientRect().right.toFixed(0)} of ${viewport} px`);
    const boxes = ex.querySelectorAll(
      '.widget-label, .widget-readout, .so-readout-box, .so-readout-box th, ' +
      '.so-readout-box td, .so-readout-box p, .so-status, h3');
    for (const el of boxes) {
      if (el.offsetParent === null) continue;  // not displayed
      if (el.getBoundingClientRect().right > edge + tolerance)
        problems.push(`text beyond the right edge (${el.getBoundingClientRect().right.toFixed(0)}` +
                      ` > ${edge.toFixed(0)} px): ${name(el)}`);
      else if (el.scrollWidth > el.clientWidth + tolerance)
        problems.push(`text wider than its box (${el.scrollWidth} > ${el.clientWidth}): ` +
                      name(el));
    }
    // a word (no space inside: "iteration", "05_pipeline_parallelism", "버블") broken over
    // several lines of a table cell or a label
    for (const el of ex.querySelectorAll('th, td, .widget-label')) {
      if (el.offsetParent === null) continue;
      const text = el.textContent.trim();
      if (!text || /\s/.test(text)) continue;
      const range = document.createRange();
      range.selectNodeContents(el);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) problems.push(`a word broken over ${lines.size} lines: ${name(el)}`);
    }
    for (const sel of ex.querySelectorAll('select:not([multiple])')) {
      if (sel.offsetParent === null) continue;
      const option = sel.options[sel.selectedIndex];
      if (!option) continue;
      const s = getComputedStyle(sel);
      const room = sel.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      const need = textWidth(option.text, sel);
      if (need > room + tolerance)
        problems.push(`menu entry cut (${need.toFixed(0)} > ${room.toFixed(0)} px): ${name(sel)}`);
    }
    for (const sel of ex.querySelectorAll('select[multiple]')) {
      if (sel.offsetParent === null) continue;
      const s = getComputedStyle(sel);
      const room = sel.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      for (const option of sel.options) {
        const need = textWidth(option.text, sel) + 8;
        if (need > room + tolerance)
          problems.push(`list entry cut (${need.toFixed(0)} > ${room.toFixed(0)} px): ` +
                        name(sel));
      }
    }
    const typed = 'input[type=text], input[type=number], input:not([type])';
    for (const box of ex.querySelectorAll(typed)) {
      if (box.offsetParent === null || !box.value) continue;
      const s = getComputedStyle(box);
      const room = box.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      const need = textWidth(box.value, box);
      if (need > room + tolerance)
        problems.push(`typed value cut (${need.toFixed(0)} > ${room.toFixed(0)} px): ${name(box)}`);
    }
    // the chart: its SVG laid out again off screen, every <text> measured
    for (const img of ex.querySelectorAll('img.so-figure')) {
      const src = img.getAttribute('src');
      if (!src) { problems.push('chart: no image'); continue; }
      if (img.getBoundingClientRect().right > ex.getBoundingClientRect().right + tolerance)
        problems.push('chart wider than the explorer');
      const svgText = await (await fetch(src)).text();
      const holder = document.createElement('div');
      holder.style.cssText = 'position:absolute;left:-20000px;top:0;';
      holder.innerHTML = svgText;
      document.body.appendChild(holder);
      try {
        // an <svg>'s viewport on the page: a nested one's bounding box would grow with
        // whatever overflows it, so it is placed by its x, y, width and height instead
        const frameOf = (svg) => {
          const outer = svg.ownerSVGElement;
          if (!outer) return svg.getBoundingClientRect();
          const p = frameOf(outer);
          const left = p.left + svg.x.baseVal.value, top = p.top + svg.y.baseVal.value;
          const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
          return {left, top, width, height, right: left + width, bottom: top + height};
        };
        const texts = [...holder.querySelectorAll('text')];
        const rects = [];
        for (const t of texts) {
          if (!t.textContent.trim()) continue;
          const r = t.getBoundingClientRect();
          const frame = frameOf(t.ownerSVGElement);
          if (r.left < frame.left - tolerance || r.right > frame.right + tolerance ||
              r.top < frame.top - tolerance || r.bottom > frame.bottom + tolerance)
            problems.push(`chart text outside the chart: "${t.textContent}" ` +
              `[${(r.left - frame.left).toFixed(0)}, ${(r.right - frame.left).toFixed(0)}] × ` +
              `[${(r.top - frame.top).toFixed(0)}, ${(r.bottom - frame.top).toFixed(0)}] in ` +
              `${frame.width.toFixed(0)} × ${frame.height.toFixed(0)}`);
          rects.push([t.textContent, r]);
        }
        // glyph boxes include the line's ascent and descent: shrink them to the ink before
        // comparing, so that two rows of text set 14 px apart do not count as touching
        const ink = (r) => ({l: r.left + 1, r: r.right - 1, t: r.top + r.height * 0.22,
                             b: r.bottom - r.height * 0.22});
        for (let i = 0; i < rects.length; i++) {
          const a = ink(rects[i][1]);
          for (let j = i + 1; j < rects.length; j++) {
            const b = ink(rects[j][1]);
            if (a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b)
              problems.push(`chart texts overlap: "${rects[i][0]}" and "${rects[j][0]}"`);
          }
        }
      } finally {
        holder.remove();
      }
    }
  }
  return problems;
}"""


def overflow_problems(page: Page, tolerance: float = 1.0) -> list[str]:
    """Every text on the page's explorers that does not fit its box (empty if all fit)."""
    return page.evaluate(_CHECK_JS, tolerance)
