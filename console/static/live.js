// Live updates of a task page. The stream (GET /api/tasks/{id}/events)
// says when the task changed; the page is then fetched again, rendered
// and escaped by the server as on a reload, and its task section swapped
// in. Nothing from an event is ever inserted as HTML.
(function () {
  "use strict";
  var el = document.getElementById("task");
  if (!el || !window.EventSource || !window.fetch || !window.DOMParser) {
    return;
  }
  var shown = el.dataset.updated;
  var busy = false;
  var again = false;

  // typing is whether the person is writing in one of the task's forms:
  // swapping the section then would throw their text away.
  function typing() {
    var a = document.activeElement;
    return a && a.form && document.getElementById("task").contains(a) && a.value !== "";
  }

  // keepPending never swaps a request's answer forms under the person's
  // hand: when the fresh page waits on another request (another digest)
  // than the one shown, the shown one stays, marked as replaced, and the
  // new one is added after it to be read. A click on the old form is
  // refused by the server (its digest no longer matches) and shows the
  // new request; nothing answers a request the person did not see.
  function keepPending(cur, fresh) {
    var old = cur.querySelector("#pending");
    var now = fresh.querySelector("#pending");
    if (!old || !old.querySelector("form") || !now || old.dataset.digest === now.dataset.digest) {
      return;
    }
    var kept = document.importNode(old, true);
    kept.id = "pending-replaced";
    kept.classList.add("replaced");
    var note = document.createElement("p");
    note.className = "notice warning";
    note.textContent = "This request is no longer the one waiting: the task asks the request below now. Read it before you answer.";
    kept.insertBefore(note, kept.firstChild);
    now.parentNode.insertBefore(kept, now);
  }

  function refresh() {
    if (busy || typing()) {
      again = true;
      return;
    }
    busy = true;
    // The task's own page, also when this one is an answer's refusal
    // (shown at the answer's POST address).
    fetch(el.dataset.page || location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (resp) {
        return resp.ok ? resp.text() : null;
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("task");
        var cur = document.getElementById("task");
        if (fresh && cur) {
          keepPending(cur, fresh);
          // A cancel's confirmation the person opened stays open.
          var was = cur.querySelector("#cancel-confirm");
          var now = fresh.querySelector("#cancel-confirm");
          if (was && was.open && now) {
            now.open = true;
          }
          cur.replaceWith(document.adoptNode(fresh));
          shown = fresh.dataset.updated;
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  // The first event is the task as the stream opened: the page may show it
  // already. Every later one says the task changed.
  var first = true;
  var src = new EventSource(el.dataset.events);
  src.addEventListener("task", function (e) {
    if (first) {
      first = false;
      var t = {};
      try {
        t = JSON.parse(e.data);
      } catch (err) {}
      if (t.updated_at === shown) {
        return;
      }
    }
    refresh();
  });
  src.addEventListener("end", function (e) {
    var why = {};
    try {
      why = JSON.parse(e.data);
    } catch (err) {}
    // A stream's time is up: EventSource opens a new one by itself.
    if (why.reason === "time") {
      return;
    }
    src.close();
    refresh();
  });
  document.addEventListener("focusout", function () {
    if (again) {
      again = false;
      refresh();
    }
  });
})();
