/*
 * Drag-and-drop upload for the calibration dashboard.
 *
 * Files dropped on #upload-zone (or picked with the hidden #upload-input,
 * opened by clicking the zone or pressing Enter/Space on it) are posted one
 * by one to POST /api/upload as multipart/form-data (field "file"), with the
 * session cookie. The address is under the page's path prefix (Dash's
 * requests_pathname_prefix, read from its _dash-config: a notebook's
 * /t/<token>/, app/token_check.py). Progress goes to #upload-status; when all files are done,
 * the JSON answers are written to the dcc.Store #upload-result with
 * dash_clientside.set_props, which triggers the Dash callback that refreshes
 * the model list and shows the messages. Files are never base64-encoded or
 * re-sent with callbacks.
 */
(function () {
  "use strict";

  var ZONE = "upload-zone";
  var INPUT = "upload-input";
  var STATUS = "upload-status";
  var RESULT = "upload-result";
  var UPLOAD_PATH = "api/upload";
  var RENORMALIZE = "upload-renormalize";
  var LABEL_COLUMN = "upload-label-column";
  var busy = false;
  var needsLabel = null;  // the last file refused for its label column, sent again once picked

  function renormalize() {
    var box = document.querySelector("#" + RENORMALIZE + " input[type=checkbox]");
    return box && box.checked ? "1" : "0";
  }

  function setProps(id, props) {
    if (window.dash_clientside && window.dash_clientside.set_props) {
      window.dash_clientside.set_props(id, props);
    }
  }

  /* Dash's requests_pathname_prefix ("/" unless the app is served under a prefix). */
  function pathPrefix() {
    var config = document.getElementById("_dash-config");
    try {
      var prefix = config && JSON.parse(config.textContent).requests_pathname_prefix;
      return typeof prefix === "string" && prefix.charAt(0) === "/" ? prefix : "/";
    } catch (e) {
      return "/";
    }
  }

  function zone() {
    return document.getElementById(ZONE);
  }

  function humanSize(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(0) + " kB";
    return bytes + " B";
  }

  function fileInput() {
    var input = document.getElementById(INPUT);
    if (!input) {
      input = document.createElement("input");
      input.type = "file";
      input.id = INPUT;
      input.multiple = true;
      input.hidden = true;
      input.setAttribute("aria-hidden", "true");
      input.addEventListener("change", function () {
        var files = Array.prototype.slice.call(input.files || []);
        input.value = "";
        uploadAll(files);
      });
      document.body.appendChild(input);
    }
    var z = zone();
    if (z && z.dataset.accept) input.accept = z.dataset.accept;
    return input;
  }

  function postFile(file, labelColumn) {
    return new Promise(function (resolve) {
      var form = new FormData();
      form.append("file", file, file.name);
      form.append("renormalize", renormalize());
      if (labelColumn) form.append("label_column", labelColumn);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", pathPrefix() + UPLOAD_PATH);
      xhr.withCredentials = true;
      xhr.responseType = "text";
      xhr.upload.onprogress = function (event) {
        if (event.lengthComputable) {
          var pct = Math.round((100 * event.loaded) / event.total);
          setProps(STATUS, {children: "Uploading " + file.name + " … " + pct + "%"});
        }
      };
      xhr.upload.onload = function () {
        setProps(STATUS, {children: "Reading " + file.name + " …"});
      };
      xhr.onload = function () {
        var body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch (e) {
          body = null;
        }
        if (body && typeof body === "object") {
          var refused = (body.errors && body.errors[0]) || {};
          if (refused.remedy === "label_column") needsLabel = file;
          resolve({
            file: file.name,
            status: xhr.status,
            models: body.models || [],
            notices: body.notices || [],
            remedy: refused.remedy || null,
            columns: refused.columns || [],
            error: xhr.status >= 400 || (body.errors && body.errors.length) ? body.error || null : null
          });
        } else {
          resolve({file: file.name, status: xhr.status, models: [],
                   error: file.name + ": the server answered with HTTP " + xhr.status + "."});
        }
      };
      xhr.onerror = function () {
        resolve({file: file.name, status: 0, models: [],
                 error: file.name + ": the upload failed (network error)."});
      };
      xhr.send(form);
    });
  }

  function uploadAll(files, labelColumn) {
    if (!files.length || busy) return;
    needsLabel = null;
    busy = true;
    var z = zone();
    var maxBytes = z ? parseInt(z.dataset.maxBytes || "0", 10) : 0;
    var results = [];
    var chain = Promise.resolve();
    files.forEach(function (file) {
      chain = chain.then(function () {
        if (maxBytes && file.size > maxBytes) {
          results.push({file: file.name, status: 413, models: [],
                        error: file.name + " is " + humanSize(file.size) + ", larger than the " +
                               humanSize(maxBytes) + " limit."});
          return null;
        }
        setProps(STATUS, {children: "Uploading " + file.name + " (" + humanSize(file.size) + ") …"});
        return postFile(file, labelColumn).then(function (r) { results.push(r); });
      });
    });
    chain.then(function () {
      busy = false;
      setProps(STATUS, {children: ""});
      setProps(RESULT, {data: {nonce: Date.now(), results: results}});
    });
  }

  function inZone(event) {
    return event.target && event.target.closest && event.target.closest("#" + ZONE);
  }

  document.addEventListener("dragover", function (event) {
    event.preventDefault();  // never let the browser open a dropped file
    var z = inZone(event);
    if (z) z.classList.add("dragging");
  });
  document.addEventListener("dragleave", function (event) {
    var z = inZone(event);
    if (z && !z.contains(event.relatedTarget)) z.classList.remove("dragging");
  });
  document.addEventListener("drop", function (event) {
    event.preventDefault();
    var z = inZone(event);
    if (!z) return;
    z.classList.remove("dragging");
    var files = Array.prototype.slice.call((event.dataTransfer && event.dataTransfer.files) || []);
    uploadAll(files);
  });
  document.addEventListener("click", function (event) {
    if (inZone(event)) fileInput().click();
  });
  document.addEventListener("change", function (event) {
    // The label-column picker: send the refused file again with the chosen column.
    if (event.target && event.target.id === LABEL_COLUMN && event.target.value && needsLabel) {
      uploadAll([needsLabel], event.target.value);
    }
  });
  document.addEventListener("keydown", function (event) {
    if ((event.key === "Enter" || event.key === " ") && inZone(event)) {
      event.preventDefault();
      fileInput().click();
    }
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", fileInput);
  } else {
    fileInput();
  }
})();
