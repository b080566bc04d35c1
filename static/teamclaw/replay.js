// TeamClaw replay page: keyboard stepping (← → Home End) and the jump slider.
// Navigation itself is plain links boosted by htmx (hx-boost on #replay-main).
(function () {
  "use strict";

  function click(step) {
    const link = document.querySelector('#replay-main a[data-step="' + step + '"]');
    if (link) link.click();
  }

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (target instanceof HTMLElement && target.closest("input, textarea, select, [contenteditable]")) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const steps = { ArrowLeft: "prev", ArrowRight: "next", Home: "first", End: "last" };
    if (steps[event.key]) {
      event.preventDefault();
      click(steps[event.key]);
    }
  });

  // The slider mirrors the step box; releasing it jumps there.
  document.addEventListener("input", function (event) {
    const range = event.target;
    if (!(range instanceof HTMLInputElement) || !range.matches("[data-jump-range]")) return;
    const number = range.form && range.form.querySelector("[data-jump-number]");
    if (number) number.value = range.value;
  });
  document.addEventListener("change", function (event) {
    const range = event.target;
    if (range instanceof HTMLInputElement && range.matches("[data-jump-range]") && range.form) range.form.requestSubmit();
  });
})();
