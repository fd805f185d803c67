/*
 * Accessible roles and names for Dash 4's option lists and sliders.
 *
 * dcc.Checklist and dcc.RadioItems (Dash 4.4) render a role="listbox" <div>
 * whose <label role="option" aria-selected> items each wrap a native checkbox
 * or radio button: screen readers announce "option" instead of "checkbox",
 * the group has no name, and axe-core reports nested-interactive and
 * aria-input-field-name. dcc.Slider's thumb (role="slider") and number box
 * have no name either (axe: aria-input-field-name, label). None of these
 * components takes aria-* props, so this script:
 *
 *   - makes each checklist or radio list (not a dropdown's popup list, a
 *     real listbox) a plain group of native controls: role="group"
 *     (checklists) or role="radiogroup" (radio items), without role="option"
 *     and aria-selected on its labels (the native inputs carry the state);
 *   - names the list, the slider thumb and its number box with the
 *     data-a11y-name of their wrapper (app/layout/page.py: `named`).
 *
 * It only changes ARIA attributes, never behaviour, and runs again on every
 * part of the page React adds and whenever React sets aria-selected again.
 */
(function () {
  "use strict";

  // Checklists and radio items only: a dropdown's popup list is a real listbox.
  var LIST = ".dash-checklist.dash-options-list, .dash-radioitems.dash-options-list";
  var OPTION = ".dash-checklist .dash-options-list-option, .dash-radioitems .dash-options-list-option";
  var NAMED = "[role=slider], input.dash-range-slider-input";

  function setAttr(el, name, value) {
    if (el.getAttribute(name) !== value) {
      el.setAttribute(name, value);
    }
  }

  function nameOf(el) {
    var wrapper = el.closest("[data-a11y-name]");
    return wrapper ? wrapper.getAttribute("data-a11y-name") : null;
  }

  function fixList(list) {
    setAttr(list, "role", list.classList.contains("dash-radioitems") ? "radiogroup" : "group");
    var name = nameOf(list);
    if (name) {
      setAttr(list, "aria-label", name);
    }
  }

  function fixOption(label) {
    if (label.hasAttribute("role")) {
      label.removeAttribute("role");
    }
    if (label.hasAttribute("aria-selected")) {
      label.removeAttribute("aria-selected");
    }
  }

  function fixNamed(el) {
    var name = nameOf(el);
    if (name && !el.getAttribute("aria-label")) {
      el.setAttribute("aria-label", name);
    }
  }

  function each(node, selector, fix) {
    if (node.matches(selector)) {
      fix(node);
    }
    node.querySelectorAll(selector).forEach(fix);
  }

  function fixTree(node) {
    if (node.nodeType !== Node.ELEMENT_NODE) {
      return;
    }
    each(node, LIST, fixList);
    each(node, OPTION, fixOption);
    each(node, NAMED, fixNamed);
  }

  function onMutations(records) {
    records.forEach(function (record) {
      if (record.type === "attributes") {
        if (record.target.matches(OPTION)) {
          fixOption(record.target);
        } else if (record.target.matches(LIST)) {
          fixList(record.target);
        }
        return;
      }
      record.addedNodes.forEach(fixTree);
    });
  }

  function start() {
    fixTree(document.body);
    new MutationObserver(onMutations).observe(document.body, {
      childList: true,
      subtree: true,
      attributes: true,
      attributeFilter: ["role", "aria-selected"],
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
