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
