// The class page's one script: sort and filter the students' table. The page is whole without
// it (every row, in folder order); the controls show only where it runs. The page's
// Content-Security-Policy lets this exact script run and nothing else (its SHA-256).
// A view can be linked: #verdict=fail&cause=cause:missing_barrier&flag=any&q=text&score=10
// &sort=score&order=desc.
(function () {
  'use strict';
  document.documentElement.classList.add('js');
  var table = document.getElementById('students');
  var form = document.getElementById('student-filters');
  if (!table || !form) {
    return;
  }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.querySelectorAll('tr.student-row'));
  var count = document.getElementById('filter-count');
  var fields = ['q', 'verdict', 'cause', 'flag', 'score'];
  var sortKey = 'folder';
  var descending = false;

  function field(name) {
    return form.elements[name];
  }

  function matches(row) {
    var data = row.dataset;
    var q = field('q').value.trim().toLowerCase();
    if (q && data.text.indexOf(q) < 0) {
      return false;
    }
    var verdict = field('verdict').value;
    if (verdict && data.verdict !== verdict) {
      return false;
    }
    var cause = field('cause').value;
    if (cause && data.cause !== cause) {
      return false;
    }
    var flag = field('flag').value;
    var flags = data.flags ? data.flags.split(' ') : [];
    if (flag === 'any' ? flags.length === 0 : flag === 'none' ? flags.length > 0
                       : flag && flags.indexOf(flag) < 0) {
      return false;
    }
    var score = field('score').value;
    if (score !== '' && !(data.score !== '' && Number(data.score) <= Number(score))) {
      return false;
    }
    return true;
  }

  function value(row, key) {
    var text = row.dataset[key] || '';
    return key === 'score' || key === 'flagcount' ? (text === '' ? -1 : Number(text)) : text;
  }

  function compare(a, b) {
    var x = value(a, sortKey);
    var y = value(b, sortKey);
    var order = typeof x === 'number' ? x - y : x.localeCompare(y);
    if (order === 0) {
      order = a.dataset.folder.localeCompare(b.dataset.folder);
      return order;
    }
    return descending ? -order : order;
  }

  function hash() {
    var parts = [];
    fields.forEach(function (name) {
      if (field(name).value !== '') {
        parts.push(name + '=' + encodeURIComponent(field(name).value));
      }
    });
    if (sortKey !== 'folder' || descending) {
      parts.push('sort=' + sortKey);
      parts.push('order=' + (descending ? 'desc' : 'asc'));
    }
    return parts.join('&');
  }

  function apply() {
    rows.sort(compare);
    var shown = 0;
    rows.forEach(function (row) {
      var keep = matches(row);
      row.hidden = !keep;
      shown += keep ? 1 : 0;
      body.appendChild(row);
    });
    count.textContent = shown + ' of ' + rows.length + ' students shown';
    table.querySelectorAll('th[data-sort]').forEach(function (th) {
      th.setAttribute('aria-sort', th.dataset.sort !== sortKey ? 'none'
                                   : descending ? 'descending' : 'ascending');
    });
    var wanted = hash();
    if (window.location.hash.slice(1) !== wanted && window.history.replaceState) {
      window.history.replaceState(null, '', wanted ? '#' + wanted : window.location.pathname);
    }
  }

  function read() {
    var given = {};
    window.location.hash.slice(1).split('&').forEach(function (part) {
      var at = part.indexOf('=');
      if (at > 0) {
        given[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1));
      }
    });
    fields.forEach(function (name) {
      var input = field(name);
      input.value = given[name] || '';
      if (input.tagName === 'SELECT' && input.value !== (given[name] || '')) {
        input.value = '';  // a value the page does not offer
      }
    });
    var sortable = table.querySelector('th[data-sort="' + given.sort + '"]');
    sortKey = sortable ? given.sort : 'folder';
    descending = given.order === 'desc';
    apply();
  }

  table.querySelectorAll('th[data-sort] button').forEach(function (button) {
    button.addEventListener('click', function () {
      var key = button.parentNode.dataset.sort;
      descending = key === sortKey ? !descending : key === 'score' || key === 'flagcount';
      sortKey = key;
      apply();
    });
  });
  form.addEventListener('input', apply);
  form.addEventListener('change', apply);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
  });
  form.addEventListener('reset', function () {
    window.setTimeout(function () {
      sortKey = 'folder';
      descending = false;
      apply();
    }, 0);
  });
  // Links elsewhere on the page (a cause's "show") set the filters through the URL.
  window.addEventListener('hashchange', function () {
    read();
    document.getElementById('students-title').scrollIntoView();
  });
  read();
})();
