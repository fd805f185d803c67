/* Clientside callbacks of the calibration dashboard (namespace "calibration"). */
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  calibration: {
    /* Open a streamed export (api/export/<token>, relative to the page, so under the
       page's path prefix, app/token_check.py) as a download. */
    openDownload: function (data) {
      if (data && typeof data.url === "string" && /^api\/export\/[A-Za-z0-9_-]+$/.test(data.url)) {
        var link = document.createElement("a");
        link.href = data.url;
        link.download = "";
        link.rel = "noopener";
        document.body.appendChild(link);
        link.click();
        link.remove();
      }
      return true;
    },
    /* The "Per group" section's gate (app/callbacks/groups/columns.py): its arguments are the
       values of the settings it follows, the group column last, then the gate's last
       value. Returns [gate, the job's request]: both while a group column is chosen, the
       gate alone once when it is cleared (the section then hides), else nothing, so that
       without a group column no request leaves the page. */
    groupGate: function () {
      var values = Array.prototype.slice.call(arguments, 0, -1);
      var last = arguments[arguments.length - 1];
      var noUpdate = window.dash_clientside.no_update;
      var grouped = function (v) { return Boolean(v && v[v.length - 1]); };
      if (grouped(values)) {
        return [{values: values}, {values: values}];
      }
      if (last && grouped(last.values)) {
        return [{values: values}, noUpdate];
      }
      return [noUpdate, noUpdate];
    },
    /* The controls drawer (below 1000 px): an odd number of presses opens it.
       Returns the dock's class and the toggle's aria-expanded. */
    toggleDrawer: function (nClicks) {
      var open = (nClicks || 0) % 2 === 1;
      return [open ? "controls-dock open" : "controls-dock", open ? "true" : "false"];
    }
  }
});
