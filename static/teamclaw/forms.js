// Small page behaviours kept out of the markup, so the Content-Security-Policy needs no inline
// script (teamclaw.middleware): a select that submits its form when changed, a button that asks
// before it submits, a form htmx posted that is cleared once the post succeeded, a button that
// copies a field's value (data-copy-from: the field's id).
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    const field = event.target;
    if (field instanceof HTMLSelectElement && field.hasAttribute("data-submit-on-change") && field.form) {
      field.form.submit();
    }
  });
  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element ? event.target.closest("[data-confirm]") : null;
    if (button && !window.confirm(button.getAttribute("data-confirm"))) {
      event.preventDefault();
    }
  });
  document.addEventListener("click", function (event) {
    const button = event.target instanceof Element ? event.target.closest("[data-copy-from]") : null;
    const field = button ? document.getElementById(button.getAttribute("data-copy-from")) : null;
    if (!button || !(field instanceof HTMLInputElement)) {
      return;
    }
    field.select();
    const done = function () {
      button.textContent = button.getAttribute("data-copied") || button.textContent;
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () {});
    } else if (document.execCommand("copy")) {
      done();
    }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.hasAttribute("data-reset-on-success") && event.detail.successful) {
      form.reset();
    }
  });
})();
