// Search for the site opened from disk (file://), where browsers refuse to start a Web Worker: the
// search's worker script runs instead in a hidden iframe of the page, and messages cross between
// the two windows. The search worker looks for `IFrameWorker` on its parent window and then reads
// its own base address from the script element that loaded it. Served over HTTP, nothing changes.
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  function dispatch(target, data) {
    setTimeout(function () {
      var event = new MessageEvent("message", { data: data });
      target.dispatchEvent(event);
      if (typeof target.onmessage === "function" && !(target instanceof Window)) {
        target.onmessage(event);
      }
    });
  }

  function IFrameWorker(url) {
    var worker = new EventTarget();
    var frame = document.createElement("iframe");
    var pending = [];
    var ready = false;
    frame.hidden = true;
    (document.body || document.documentElement).appendChild(frame);
    var scope = frame.contentWindow;
    scope.postMessage = function (data) {
      dispatch(worker, data);
    };
    worker.postMessage = function (data) {
      if (ready) {
        dispatch(scope, data);
      } else {
        pending.push(data);
      }
    };
    worker.terminate = function () {
      frame.remove();
    };
    var script = scope.document.createElement("script");
    script.src = new URL(url, location.href).href;
    script.onload = function () {
      ready = true;
      pending.splice(0).forEach(function (data) {
        dispatch(scope, data);
      });
    };
    script.onerror = function () {
      var event = new ErrorEvent("error", { message: "could not load " + script.src });
      worker.dispatchEvent(event);
      if (typeof worker.onerror === "function") {
        worker.onerror(event);
      }
    };
    scope.document.head.appendChild(script);
    return worker;
  }

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
