"""blockAds' second half: the ad elements a page still holds — slots, "Advertisement" labels, sponsored boxes
— hidden by EasyList's element-hiding rules, as uBlock Origin hides them.

The requests are blocked by blocking.py; what they would have filled stays in the page as an empty box or
a label. In every web document of the context an init script tells this module, once the document is
parsed and then as the page adds elements or changes their class or id (only those are looked at again),
which class names and ids it has not told before; the
engine answers with the selectors its rules hide for them (and, the first time, the page's own site's
selectors), and the script adds them to the document as `display: none !important` — one CSS rule per
selector, so that one the browser cannot parse leaves the others standing. Hidden elements are what a
scrape leaves out of its text and a screenshot does not show.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext

log = logging.getLogger("boxwright.agent.browser")

BINDING = "__boxwrightAdStyles"
MAX_NAMES = 5_000  # class names and ids told in one call (a page with more tells them in several)

SCRIPT = f"""if (/^https?:$/.test(location.protocol) && !window.{BINDING}Started) (() => {{
  window.{BINDING}Started = true;
  const told = new Set();
  let first = true, queued = [], pending = null;
  const collect = (el, classes, ids) => {{
    for (const name of el.classList || []) if (!told.has("." + name)) {{ told.add("." + name); classes.push(name); }}
    if (el.id && !told.has("#" + el.id)) {{ told.add("#" + el.id); ids.push(el.id); }}
  }};
  const tell = () => {{
    pending = null;
    const roots = queued;
    queued = [];
    const classes = [], ids = [];
    for (const root of roots) {{
      if (!root.isConnected) continue;
      collect(root, classes, ids);
      for (const el of root.querySelectorAll("[class], [id]")) collect(el, classes, ids);
    }}
    if (!first && !classes.length && !ids.length) return;
    const site = first;
    first = false;
    for (let at = 0; at < Math.max(classes.length, ids.length, 1); at += {MAX_NAMES}) {{
      const some = [classes.slice(at, at + {MAX_NAMES}), ids.slice(at, at + {MAX_NAMES})];
      window.{BINDING}(location.href, some[0], some[1], site && at === 0).then((selectors) => {{
        if (!selectors || !selectors.length) return;
        const style = document.createElement("style");
        (document.head || document.documentElement).appendChild(style);
        for (const selector of selectors) {{
          try {{ style.sheet.insertRule(selector + " {{ display: none !important; }}", style.sheet.cssRules.length); }}
          catch (e) {{ /* a selector this browser cannot parse */ }}
        }}
      }}).catch(() => {{}});
    }}
  }};
  const later = (node) => {{
    if (node.nodeType !== 1) return;
    queued.push(node);
    if (!pending) pending = setTimeout(tell, 100);
  }};
  const start = () => {{
    queued.push(document.documentElement);
    tell();
    new MutationObserver((records) => {{
      for (const record of records) {{
        if (record.type === "attributes") later(record.target);
        else for (const node of record.addedNodes) later(node);
      }}
    }}).observe(document.documentElement, {{ childList: true, subtree: true, attributes: true,
                                           attributeFilter: ["class", "id"] }});
  }};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start, {{ once: true }});
  else start();
}})();"""


async def install(context: BrowserContext, engine: Any) -> None:
    """The element-hiding rules of `engine` applied in every web document of `context` from now on."""

    def selectors(_source: dict[str, Any], url: Any, classes: Any, ids: Any, site: Any) -> list[str]:
        if not (isinstance(url, str) and isinstance(classes, list) and isinstance(ids, list)):
            return []
        names = [str(c) for c in classes[:MAX_NAMES]], [str(i) for i in ids[:MAX_NAMES]]
        try:
            resources = engine.url_cosmetic_resources(url)
            hidden = set(resources.hide_selectors) if site else set()
            hidden.update(engine.hidden_class_id_selectors(names[0], names[1], resources.exceptions))
            return sorted(hidden - set(resources.exceptions))
        except Exception as exc:  # a URL the engine cannot parse: hide nothing rather than fail the page
            log.debug("no element-hiding rules for a page: %s", type(exc).__name__)
            return []

    await context.expose_binding(BINDING, selectors)
    await context.add_init_script(script=SCRIPT)
