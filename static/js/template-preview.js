/* Live preview in the message editor. Without JavaScript the "Preview" button does the same:
   the draft is posted with action=preview and the server renders it through the real send path.
   Here the same request is made as the owner types, and the new preview replaces the old one. */
(function () {
  "use strict";
  var form = document.getElementById("template-form");
  var target = document.getElementById("preview-body");
  var status = document.getElementById("preview-status");
  if (!form || !target || !window.fetch || !window.DOMParser || !window.AbortController) {
    return;
  }
  var timer = null;
  var inFlight = null;

  function refresh() {
    var data = new FormData(form);
    data.set("action", "preview");
    if (inFlight) {
      inFlight.abort();
    }
    inFlight = new AbortController();
    // form.action would be the "action" button, not the attribute: post where the form posts.
    fetch(form.getAttribute("action") || window.location.href, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      signal: inFlight.signal
    })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("preview-body");
        if (!fresh) {
          return;
        }
        target.innerHTML = fresh.innerHTML;
        var announce = target.querySelector("[data-announce]");
        if (status) {
          status.textContent = announce ? announce.textContent : "The preview shows what to fix.";
        }
      })
      .catch(function () { /* aborted by a newer keystroke, or offline: the button still works */ });
  }

  form.addEventListener("input", function () {
    window.clearTimeout(timer);
    timer = window.setTimeout(refresh, 400);
  });
})();
