// Matrix editor: mark staged cells while the operator edits, warn before leaving with
// unsaved changes. The server decides what is staged from the form's `base`; this only
// keeps the highlighting honest.
(function () {
  "use strict";
  const form = document.getElementById("matrix-form");
  if (!form) return;
  let submitting = false;

  function staged(cell) {
    const reset = cell.querySelector('input[name="reset"]');
    if (reset && reset.checked) return true;
    const box = cell.querySelector('input[name="allow"]');
    if (box) return (box.checked ? "1" : "0") !== box.dataset.base;
    const select = cell.querySelector("select");
    return select ? select.value !== select.dataset.base : false;
  }

  function refresh() {
    let count = 0;
    form.querySelectorAll("td.cell").forEach(function (cell) {
      const on = staged(cell);
      cell.classList.toggle("staged", on);
      if (on) count += 1;
      const select = cell.querySelector("select");
      if (select) select.className = "mode-" + select.value;
    });
    form.dataset.staged = String(count);
  }

  form.addEventListener("change", refresh);
  form.addEventListener("submit", function () { submitting = true; });
  window.addEventListener("beforeunload", function (event) {
    if (!submitting && Number(form.dataset.staged || 0) > 0) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  refresh();
})();
