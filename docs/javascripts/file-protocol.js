// Opened from disk (file://), a browser will not start the search's web worker, and Material
// hides the search box: say in the header where search works instead.
if (location.protocol === "file:") {
  document.addEventListener("DOMContentLoaded", function () {
    var header = document.querySelector(".md-header__inner");
    if (!header || document.getElementById("fairsim-file-note")) return;
    var note = document.createElement("div");
    note.id = "fairsim-file-note";
    note.className = "md-header__option";
    note.style.fontSize = "0.65rem";
    note.style.marginRight = "0.6rem";
    note.style.whiteSpace = "nowrap";
    note.textContent = "opened from disk: for search, run make docs-serve";
    header.appendChild(note);
  });
}
