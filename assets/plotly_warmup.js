/*
 * Plotly's first plot on a page costs about 0.2 s more than the next ones
 * (style sheet, text measurement, defaults of each trace type). The page has
 * idle time between rendering Dash's layout and drawing the first diagrams
 * (the lazily loaded graph component, the first callbacks): draw a tiny
 * off-screen plot with the trace types of a reliability diagram there, once,
 * then remove it. Nothing is shown and nothing is left behind.
 */
(function () {
  "use strict";

  var started = false;

  function warmUp() {
    var Plotly = window.Plotly;
    if (started || !Plotly || typeof Plotly.newPlot !== "function") {
      return;
    }
    started = true;
    var box = document.createElement("div");
    box.setAttribute("aria-hidden", "true");
    box.style.cssText =
      "position:absolute;left:-10000px;top:0;width:360px;height:240px;overflow:hidden;";
    document.body.appendChild(box);
    var data = [
      { type: "scatter", mode: "lines", x: [0, 1], y: [0, 1] },
      { type: "scatter", mode: "lines", fill: "toself", x: [0, 1, 1, 0], y: [0, 0, 1, 1] },
      {
        type: "scatter",
        mode: "lines+markers",
        x: [0.2, 0.6],
        y: [0.3, 0.5],
        marker: { size: [6, 9] },
        hovertemplate: "%{y:.3f}<extra></extra>",
      },
      { type: "bar", x: [0.25, 0.75], y: [3, 5], xaxis: "x2", yaxis: "y2" },
    ];
    var layout = {
      width: 360,
      height: 240,
      showlegend: true,
      title: { text: "warm-up", subtitle: { text: "warm-up" } },
      annotations: [{ text: "ECE", x: 0, y: 1, xref: "paper", yref: "paper", showarrow: false }],
      xaxis: { domain: [0, 1], anchor: "y", showticklabels: false },
      yaxis: { domain: [0.4, 1], anchor: "x", title: { text: "accuracy" } },
      xaxis2: { domain: [0, 1], anchor: "y2", title: { text: "confidence" } },
      yaxis2: { domain: [0, 0.3], anchor: "x2" },
    };
    var cleanUp = function () {
      try {
        Plotly.purge(box);
      } catch (error) {
        /* nothing to undo */
      }
      box.remove();
    };
    try {
      Promise.resolve(Plotly.newPlot(box, data, layout, { staticPlot: false, displayModeBar: false }))
        .then(cleanUp, cleanUp);
    } catch (error) {
      cleanUp();
    }
  }

  function schedule() {
    // After the task that rendered the layout, before the diagrams mount.
    setTimeout(warmUp, 0);
  }

  var observer = new MutationObserver(function () {
    if (document.querySelector(".reliability-graph")) {
      observer.disconnect();
      schedule();
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector(".reliability-graph")) {
      schedule();
      return;
    }
    observer.observe(document.body, { childList: true, subtree: true });
  });
})();
