/*
 * Back and Forward show the view of the address they go to.
 *
 * Every change of the view writes its settings into the page address
 * (app/view_url.py, through a dcc.Location with refresh=False), and the
 * Location adds a history entry for each. Back then changes the address but
 * not the page, which would show one view under the address of another. The
 * server draws the view of an address when it serves the page, so a step
 * through the history (the "popstate" event; the page itself never changes
 * only the address's #fragment) reloads the page at the address stepped to.
 */
(function () {
  "use strict";

  window.addEventListener("popstate", function () {
    window.location.reload();
  });
})();
