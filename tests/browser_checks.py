"""Checks a page must pass in a real browser, shared by the report's and the card's browser
tests: scripts to hand to Playwright's `page.evaluate`, each returning what it measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: WCAG 2 contrast of each element's own visible text against the background it sits on
#: (ancestors' backgrounds composited over white); SVG text by its fill; the text of a disabled
#: control is left out, as WCAG 1.4.3 exempts it; `large`: 24 px, or 18.66 px bold
CONTRASTS = """() => {
  const rgba = s => { const m = /rgba?\\(([^)]+)\\)/.exec(s || ''); if (!m) return null;
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3]))
    .concat([1]);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92
    : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1])
    + 0.0722 * f(c[2]); };
  const backdrop = el => { const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]); };
  const out = [], seen = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const el = walk.currentNode.parentElement;
    if (!walk.currentNode.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const style = getComputedStyle(el);
    if (!el.getClientRects().length || style.visibility === 'hidden') continue;
    if (el.closest(':disabled')) continue;  // WCAG 1.4.3 exempts inactive controls
    const fg = rgba(el.closest('svg') ? style.fill : style.color);
    if (!fg) continue;
    const bg = backdrop(el), a = lum(over(fg, bg)), b = lum(bg);
    const px = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
    out.push({text: walk.currentNode.textContent.trim().slice(0, 50), tag: el.tagName,
              cls: el.className && el.className.baseVal === undefined ? el.className : '',
              ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
              large: px >= 24 || (bold && px >= 18.66)});
  }
  return out;
}"""

#: the pictures (outermost <svg>, <img>, role=img) and the text that stands for each: an
#: aria-label, a <title> child, or alt; aria-hidden ones are left out (decoration)
ALTERNATIVES = """() => [...document.querySelectorAll('svg, img, [role=img]')]
  .filter(e => !(e.parentElement && e.parentElement.closest('svg'))
               && !e.closest('[aria-hidden=true]'))
  .map(e => { const title = e.tagName.toLowerCase() === 'svg'
      ? [...e.children].find(c => c.tagName.toLowerCase() === 'title') : null;
    return {tag: e.tagName.toLowerCase(), role: e.getAttribute('role') || '',
            text: (e.getAttribute('aria-label') || (title && title.textContent)
                   || e.getAttribute('alt') || '').trim(),
            where: (e.closest('section') || document.body).id || ''}; })"""

#: header cells without any text a screen reader could announce (their own text or an
#: aria-label)
EMPTY_HEADERS = """() => [...document.querySelectorAll('th')]
  .filter(th => !th.textContent.trim() && !(th.getAttribute('aria-label') || '').trim())
  .map(th => ({where: (th.closest('section') || document.body).id || '',
               html: th.outerHTML.slice(0, 80)}))"""

#: every heading's level (h1..h6) in document order
HEADINGS = """() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')]
  .map(h => ({level: Number(h.tagName[1]), text: h.textContent.trim().slice(0, 60)}))"""


def low_contrasts(contrasts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The texts under WCAG 2.1 AA's minimum contrast (1.4.3): 4.5:1, or 3:1 for large text
    (24 px, or 18.66 px bold)."""
    return [c for c in contrasts if c["ratio"] < (3.0 if c.get("large") else 4.5)]


def skipped_levels(headings: Sequence[Mapping[str, Any]]) -> list[str]:
    """Headings that go down more than one level from the one before (an h1 then an h3)."""
    out, level = [], 0
    for heading in headings:
        if heading["level"] > level + 1:
            out.append(f"h{level} -> h{heading['level']} {heading['text']!r}")
        level = heading["level"]
    return out


#: what makes a page unreadable on a phone: its width against the window's, the tables wider
#: than the window (`wide`) and those of them that stick out of the page instead of scrolling
#: in a box of their own inside it (`loose`), and the figures drawn narrower than `min` px
#: (`small`; a figure whose own width is smaller counts only below that)
NARROW = """min => {
  const vw = document.documentElement.clientWidth;
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (e.getAttribute('class') ? '.' + e.getAttribute('class').split(' ').join('.') : '');
  const boxed = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if ((o === 'auto' || o === 'scroll') && a.getBoundingClientRect().right <= vw + 0.5
          && a.scrollWidth > a.clientWidth) return true; }
    return false; };
  const shown = [...document.querySelectorAll('table')].filter(t => t.getClientRects().length);
  const wide = shown.filter(t => t.getBoundingClientRect().width > vw);
  const small = [...document.querySelectorAll('figure svg')].filter(s => {
    const own = parseFloat(s.style.maxWidth) || Infinity, w = s.getBoundingClientRect().width;
    return w > 0 && w < Math.min(min, own) - 0.5; });
  return {scrollWidth: document.documentElement.scrollWidth, clientWidth: vw,
          tables: shown.length, wide: wide.map(name),
          loose: shown.filter(t => t.getBoundingClientRect().right > vw + 0.5 && !boxed(t))
            .map(name),
          figures: document.querySelectorAll('figure svg').length,
          small: small.map(s => Math.round(s.getBoundingClientRect().width))};
}"""


def narrow_problems(measured: Mapping[str, Any]) -> list[str]:
    """What NARROW found wrong, in words: empty for a page readable at that width."""
    problems = []
    if measured["scrollWidth"] > measured["clientWidth"]:
        problems.append(f"the page scrolls sideways ({measured['scrollWidth']} px in "
                        f"{measured['clientWidth']})")
    if measured["loose"]:
        problems.append(f"tables outside a scroll box: {measured['loose'][:5]}")
    if measured["small"]:
        problems.append(f"figures shrunk to {measured['small'][:5]} px")
    return problems
