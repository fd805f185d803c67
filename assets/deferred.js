/*
 * calibration_dashboard.Deferred (Python side: app/components.py).
 *
 * Renders its children only once no element of the page matches the
 * `pending` CSS selector (e.g. "a reliability diagram that Plotly has not
 * drawn yet"), after the browser has painted that state, or after `timeout`
 * milliseconds, whichever comes first. The page's first diagrams are drawn
 * in one long task together with everything mounted at the same time; the
 * metrics grid (dash-ag-grid, 0.2-0.3 s to build on a laptop core) waits
 * behind this wrapper so the diagrams show first. Once shown, the children
 * stay shown; their props follow callbacks all along.
 */
(function () {
  "use strict";

  var React = window.React;

  function Deferred(props) {
    var pending = props.pending;
    var timeout = props.timeout === undefined ? 3000 : props.timeout;
    var state = React.useState(false);
    var ready = state[0];
    var setReady = state[1];

    React.useEffect(function () {
      if (ready) {
        return undefined;
      }
      var done = false;
      var cancelled = false;
      var observer = null;
      var timer = null;
      var frame = null;

      function show() {
        if (!cancelled) {
          setReady(true);
        }
      }

      function reveal() {
        if (done) {
          return;
        }
        done = true;
        if (observer) {
          observer.disconnect();
        }
        clearTimeout(timer);
        // Next frame (after the diagrams are painted), then a fresh task.
        frame = window.requestAnimationFrame(function () {
          timer = setTimeout(show, 0);
        });
      }

      function check() {
        var waiting = false;
        if (pending) {
          try {
            waiting = document.querySelector(pending) !== null;
          } catch (error) {
            waiting = false; // an invalid selector never holds the children back
          }
        }
        if (!waiting) {
          reveal();
        }
      }

      check();
      if (!done) {
        observer = new MutationObserver(check);
        observer.observe(document.body, { childList: true, subtree: true });
        timer = setTimeout(reveal, timeout);
      }
      return function () {
        cancelled = true;
        done = true;
        if (observer) {
          observer.disconnect();
        }
        clearTimeout(timer);
        if (frame !== null) {
          window.cancelAnimationFrame(frame);
        }
      };
    }, []);

    var attributes = { id: props.id, className: props.className };
    if (!ready) {
      attributes["aria-busy"] = "true";
    }
    return React.createElement("div", attributes, ready ? props.children : null);
  }

  window.calibration_dashboard = Object.assign(window.calibration_dashboard || {}, {
    Deferred: Deferred,
  });
})();
