// The policy content editor in the admin: checks the content as the admin types (debounced) with
// the server's own rule (POST validate/), and shows each problem on the field, before saving.
(function () {
  "use strict";
  function init() {
    var area = document.querySelector("textarea.policy-content-editor");
    if (!area) return;
    var box = document.createElement("div");
    box.className = "policy-live-check";
    box.setAttribute("aria-live", "polite");
    box.id = "content-live-check";
    area.parentNode.insertBefore(box, area);
    var token = area.form.querySelector("input[name=csrfmiddlewaretoken]").value;
    var timer = null, seq = 0;

    function item(text, cls) {
      var li = document.createElement("li");
      li.textContent = text;
      if (cls) li.className = cls;
      return li;
    }

    function show(result) {
      box.textContent = "";
      var list = document.createElement("ul");
      list.className = result.valid ? "policy-live-ok" : "errorlist policy-live-errors";
      if (result.valid) {
        list.appendChild(item("Valid content: it can be saved.", "policy-live-valid"));
      }
      result.errors.forEach(function (e) { list.appendChild(item((e.field || "(content)") + ": " + e.message)); });
      (result.warnings || []).forEach(function (e) {
        list.appendChild(item("Activation would refuse " + e.field + ": " + e.message, "policy-live-warning"));
      });
      box.appendChild(list);
      area.setAttribute("aria-invalid", result.valid ? "false" : "true");
      area.classList.toggle("policy-content-invalid", !result.valid);
    }

    function check() {
      var mine = ++seq;
      var body = new URLSearchParams({content: area.value});
      fetch(area.dataset.validateUrl, {method: "POST", body: body, credentials: "same-origin",
                                 headers: {"X-CSRFToken": token}})
        .then(function (r) { return r.json(); })
        .then(function (result) { if (mine === seq) show(result); })
        .catch(function () { /* the save checks again */ });
    }

    area.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(check, 300);
    });
    check();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
