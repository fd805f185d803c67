/*
 * Enter in a slider's number box applies the value.
 *
 * Dash 4's dcc.Slider commits a number typed in its box only when the box
 * loses focus (onBlur), so typing "12" and pressing Enter changed nothing.
 * On Enter, blur the box (React's onBlur commits the value) and focus it
 * again, so keyboard users stay where they were.
 */
(function () {
  "use strict";

  document.addEventListener("keydown", function (event) {
    var box = event.target;
    if (event.key !== "Enter" || !box || !box.classList ||
        !box.classList.contains("dash-range-slider-input")) {
      return;
    }
    event.preventDefault();
    box.blur();
    box.focus();
  });
})();

/*
 * Escape in the open controls drawer (below 1000 px) closes it: the press goes
 * to its toggle button (so the clientside callback keeps the state) and the
 * focus returns there. Escape inside an open dropdown only closes the dropdown.
 */
(function () {
  "use strict";

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || event.defaultPrevented) {
      return;
    }
    var dock = document.getElementById("controls-dock");
    var toggle = document.getElementById("controls-toggle");
    if (!dock || !toggle || !dock.classList.contains("open") ||
        !dock.contains(event.target) || toggle.offsetParent === null) {
      return;
    }
    toggle.click();
    toggle.focus();
  });
})();
