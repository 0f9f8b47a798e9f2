// The heat map's hover: the cell under the pointer is outlined and its <title> (time range,
// latency range, count) is shown in the details line under the legend.
(function () {
    'use strict';
    var cells = document.getElementById('cells');
    var details = document.getElementById('details');
    if (!cells || !details) return;
    var idle = details.textContent;
    var current = null;

    function show(rect) {
        if (current) current.setAttribute('class', '');
        current = rect;
        if (!rect) {
            details.textContent = idle;
            return;
        }
        rect.setAttribute('class', 'hl');
        var title = rect.getElementsByTagName('title')[0];
        details.textContent = title ? title.textContent : 'count ' + rect.getAttribute('data-n');
    }

    cells.addEventListener('mouseover', function (e) {
        if (e.target && e.target.tagName === 'rect') show(e.target);
    });
    cells.addEventListener('mouseout', function (e) {
        if (e.target === current) show(null);
    });
})();
