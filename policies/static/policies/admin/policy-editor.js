// The policy content editor in the admin.
//
// - A form for the policy's `defaults`, generated from the JSON Schema of the settings' pydantic
//   model (policies/editor.py, in the textarea's data-settings-schema): each field with its help,
//   enums as choices, channel lists offered from the channels that exist. It edits the JSON
//   below it, which stays the whole content (rules, governance and escalation are edited there).
// - The check as the admin types: the content is posted to validate/ (debounced), where the
//   server applies the same rule as on save; each problem shows on its form field and above the
//   JSON, before saving.
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function resolve(schema, root) {
    if (schema && schema.$ref) return root.$defs[schema.$ref.split("/").pop()];
    return schema;
  }

  function init() {
    var area = document.querySelector("textarea.policy-content-editor");
    if (!area) return;
    var token = area.form.querySelector("input[name=csrfmiddlewaretoken]").value;
    var root = JSON.parse(area.dataset.settingsSchema || "null");
    // One block for the form, the check and the JSON: the admin lays a field's parts out in a row.
    var editor = el("div", {"class": "policy-editor"});
    area.parentNode.insertBefore(editor, area);
    var box = el("div", {id: "content-live-check", "class": "policy-live-check", "aria-live": "polite"});
    editor.appendChild(box);
    editor.appendChild(area);
    var fields = {};  // path -> {row, read(), write(value)}
    var timer = null, seq = 0;

    function parsed() {
      try { return JSON.parse(area.value); } catch (e) { return undefined; }
    }

    function getPath(obj, path) {
      return path.split(".").reduce(function (o, k) { return o && typeof o === "object" ? o[k] : undefined; }, obj);
    }

    function setPath(obj, path, value) {
      var keys = path.split("."), last = keys.pop(), o = obj;
      keys.forEach(function (k) { if (typeof o[k] !== "object" || o[k] === null) o[k] = {}; o = o[k]; });
      o[last] = value;
    }

    function changed(path, value) {
      var content = parsed();
      if (content === undefined || typeof content !== "object" || content === null) {
        show({valid: false, errors: [{field: "", message: "fix the JSON below to use the form"}], warnings: []});
        return;
      }
      setPath(content, path, value);
      area.value = JSON.stringify(content, null, 2);
      schedule();
    }

    function numberValue(text, integer) {
      var t = text.trim();
      if (t === "" || isNaN(Number(t))) return t;  // kept as typed: the check names the problem
      return integer && /^-?\d+$/.test(t) ? parseInt(t, 10) : Number(t);
    }

    function channelList(path, schema, nullable, container) {
      var names = (schema.items && schema.items.enum) || [];
      var group = el("div", {"class": "policy-form-choices"});
      var any = null;
      if (nullable) {
        var anyLabel = el("label", {});
        any = el("input", {type: "checkbox", "data-path": path + ":null"});
        anyLabel.appendChild(any);
        anyLabel.appendChild(document.createTextNode(" any configured channel (null)"));
        group.appendChild(anyLabel);
      }
      var boxes = [];
      function addBox(name) {
        var label = el("label", {});
        var cb = el("input", {type: "checkbox", value: name, "data-path": path});
        label.appendChild(cb);
        label.appendChild(document.createTextNode(" " + name));
        group.appendChild(label);
        boxes.push(cb);
        cb.addEventListener("change", function () { changed(path, read()); });
        return cb;
      }
      names.forEach(addBox);
      function read() {
        if (any && any.checked) return null;
        return boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      }
      function write(value) {
        if (any) any.checked = value === null;
        (Array.isArray(value) ? value : []).forEach(function (name) {
          if (!boxes.some(function (b) { return b.value === name; })) addBox(name);  // a name that does not exist yet
        });
        boxes.forEach(function (b) {
          b.checked = Array.isArray(value) && value.indexOf(b.value) !== -1;
          b.disabled = !!(any && any.checked);
        });
      }
      if (any) any.addEventListener("change", function () { changed(path, read()); });
      container.appendChild(group);
      return {read: read, write: write};
    }

    function control(path, schema, container) {
      schema = resolve(schema, root);
      var variants = schema.anyOf || [schema];
      var nullable = variants.some(function (v) { return v.type === "null"; });
      var main = resolve(variants.filter(function (v) { return v.type !== "null"; })[0] || schema, root);
      if (main.type === "array" && main.items && main.items.enum) return channelList(path, main, nullable, container);
      var input;
      if (main.enum) {
        input = el("select", {id: "form-" + path, "data-path": path});
        main.enum.forEach(function (v) { input.appendChild(el("option", {value: v}, v)); });
        input.addEventListener("change", function () { changed(path, input.value); });
        container.appendChild(input);
        return {write: function (v) { input.value = v; }};
      }
      if (main.type === "boolean") {
        input = el("input", {type: "checkbox", id: "form-" + path, "data-path": path});
        input.addEventListener("change", function () { changed(path, input.checked); });
        container.appendChild(input);
        return {write: function (v) { input.checked = v === true; }};
      }
      if (main.type === "number" || main.type === "integer") {
        input = el("input", {type: "text", inputmode: "decimal", id: "form-" + path, "data-path": path,
                             "class": "vIntegerField"});
        input.addEventListener("input", function () { changed(path, numberValue(input.value, main.type === "integer")); });
        container.appendChild(input);
        return {write: function (v) { if (document.activeElement !== input) input.value = v === undefined ? "" : String(v); }};
      }
      var note = el("code", {"class": "policy-form-json"});
      container.appendChild(note);
      container.appendChild(el("span", {"class": "policy-form-help"}, " (edit it in the JSON below)"));
      return {write: function (v) { note.textContent = JSON.stringify(v === undefined ? null : v); }};
    }

    function build(schema, prefix, parent) {
      schema = resolve(schema, root);
      Object.keys(schema.properties).forEach(function (key) {
        var prop = resolve(schema.properties[key], root);
        var path = prefix + "." + key;
        if (prop.type === "object" && prop.properties) {
          var sub = el("fieldset", {"class": "policy-form-group"});
          sub.appendChild(el("legend", {}, key));
          if (schema.properties[key].description || prop.description) {
            sub.appendChild(el("div", {"class": "policy-form-help"}, schema.properties[key].description || prop.description));
          }
          build(prop, path, sub);
          parent.appendChild(sub);
          return;
        }
        var row = el("div", {"class": "policy-form-row", "data-path": path});
        row.appendChild(el("label", {"for": "form-" + path}, key));
        var cell = el("div", {"class": "policy-form-cell"});
        var handle = control(path, schema.properties[key], cell);
        var description = schema.properties[key].description;
        if (description) cell.appendChild(el("div", {"class": "policy-form-help"}, description));
        var error = el("ul", {"class": "errorlist policy-form-error"});
        cell.appendChild(error);
        row.appendChild(cell);
        parent.appendChild(row);
        fields[path] = {row: row, write: handle.write, error: error};
      });
    }

    function refresh() {
      var content = parsed();
      if (content === undefined) return;
      Object.keys(fields).forEach(function (path) { fields[path].write(getPath(content, path)); });
    }

    function show(result) {
      box.textContent = "";
      var list = el("ul", {"class": result.valid ? "policy-live-ok" : "errorlist policy-live-errors"});
      if (result.valid) list.appendChild(el("li", {"class": "policy-live-valid"}, "Valid content: it can be saved."));
      result.errors.forEach(function (e) { list.appendChild(el("li", {}, (e.field || "(content)") + ": " + e.message)); });
      (result.warnings || []).forEach(function (e) {
        list.appendChild(el("li", {"class": "policy-live-warning"}, "Activation would refuse " + e.field + ": " + e.message));
      });
      box.appendChild(list);
      area.setAttribute("aria-invalid", result.valid ? "false" : "true");
      area.classList.toggle("policy-content-invalid", !result.valid);
      Object.keys(fields).forEach(function (path) {
        var f = fields[path];
        f.error.textContent = "";
        f.row.classList.remove("errors");
      });
      result.errors.concat(result.warnings || []).forEach(function (e) {
        var path = e.field || "";
        while (path && !fields[path]) path = path.indexOf(".") === -1 ? "" : path.slice(0, path.lastIndexOf("."));
        if (!path) return;
        fields[path].error.appendChild(el("li", {}, e.message + (e.field !== path ? " (" + e.field + ")" : "")));
        fields[path].row.classList.add("errors");
      });
    }

    function check() {
      var mine = ++seq;
      fetch(area.dataset.validateUrl, {method: "POST", body: new URLSearchParams({content: area.value}),
                                       credentials: "same-origin", headers: {"X-CSRFToken": token}})
        .then(function (r) { return r.json(); })
        .then(function (result) { if (mine === seq) show(result); })
        .catch(function () { /* the save checks again */ });
    }

    function schedule() {
      clearTimeout(timer);
      timer = setTimeout(check, 300);
    }

    if (root) {
      var form = el("fieldset", {"class": "module policy-settings-form", id: "policy-settings-form"});
      form.appendChild(el("h2", {}, "Defaults (form)"));
      form.appendChild(el("p", {"class": "policy-form-help"},
        "The settings every request gets unless a rule sets them. Changes here edit the JSON below, which holds the whole content."));
      build(root, "defaults", form);
      box.parentNode.insertBefore(form, box);
      refresh();
    }
    area.addEventListener("input", function () { refresh(); schedule(); });
    check();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
