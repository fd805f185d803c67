/*
 * Keep Plotly's modebar buttons (zoom, pan, download...) out of the tab order.
 *
 * Every figure has seven of them, so a keyboard user had to tab through
 * dozens of toolbar buttons to get from the Fit button to the metrics table.
 * Plotly has no option for it and redraws the modebar with its figure, so
 * a MutationObserver marks each new button tabindex=-1; they stay usable
 * with the mouse.
 */
(function () {
  "use strict";

  function untab() {
    var buttons = document.querySelectorAll(".modebar-btn:not([tabindex='-1'])");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("tabindex", "-1");
    }
  }

  function start() {
    untab();
    // One query per batch of changes: cheap next to Plotly's own redraw.
    new MutationObserver(untab).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
